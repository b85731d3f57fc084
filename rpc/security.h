// Who may talk to a graph server: TLS (server certificate, optionally mutual with client
// certificates) and a shared-secret token sent as call metadata. The flags are in
// base/security_options.h; this loads their files and makes gRPC credentials.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/security_options.h"

namespace grpc {
class ChannelArguments;
class ChannelCredentials;
class ServerCredentials;
}  // namespace grpc

namespace fanout::rpc {

using base::SecurityOptions;

// Loaded key material. Cheap to copy.
class Security {
 public:
  enum class Role { kServer, kClient };
  // Reads and checks the files of `o` (errors name the flag and the file). No options: plaintext,
  // no token.
  static absl::StatusOr<Security> Load(const SecurityOptions& o, Role role);

  // Whether Load made it (a default-constructed Security is plaintext, no token, not loaded).
  bool loaded() const { return loaded_; }
  bool tls() const { return tls_; }
  bool mutual_tls() const { return tls_ && !ca_pem_.empty() && !cert_pem_.empty(); }
  const std::string& token() const { return token_; }
  // "TLS", "mutual TLS", "plaintext", with ", token" when a token is required or sent.
  std::string Describe() const;

  std::shared_ptr<grpc::ServerCredentials> ServerCredentials() const;
  std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials() const;
  // Channel settings that go with ChannelCredentials (the expected server name).
  void ApplyTo(grpc::ChannelArguments* args) const;

 private:
  bool loaded_ = false;
  bool tls_ = false;
  std::string cert_pem_, key_pem_, ca_pem_, server_name_, token_;
};

using base::IsLoopbackHost;

}  // namespace fanout::rpc
