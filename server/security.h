// Who may talk to a graph server: TLS (server certificate, optionally mutual with client
// certificates) and a shared-secret token sent as call metadata. The same flags are on every
// fanout process that serves or calls the GraphService; the launcher hands them on.
//
//   --tls-cert FILE        PEM certificate chain of this process (servers: turns TLS on;
//                          clients: presented for mutual TLS)
//   --tls-key FILE         its PEM private key
//   --tls-ca FILE          PEM CA bundle: clients verify servers with it (TLS on); servers
//                          require and verify client certificates signed by it (mutual TLS)
//   --tls-server-name NAME clients: the name servers' certificates carry, when it is not the
//                          host of the address dialled (e.g. certificates for a DNS name, ip_config
//                          by IP)
//   --auth-token-file FILE a file holding one line, the token; servers refuse calls without it
//                          (UNAUTHENTICATED), clients send it ("authorization: Bearer <token>")
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace grpc {
class ChannelArguments;
class ChannelCredentials;
class ServerCredentials;
}  // namespace grpc

namespace fanout::core {
class ArgParser;
}

namespace fanout::server {

struct SecurityOptions {
  std::string tls_cert, tls_key, tls_ca, tls_server_name;
  std::string auth_token_file;

  bool any() const { return !tls_cert.empty() || !tls_key.empty() || !tls_ca.empty() || !auth_token_file.empty(); }
};

// Adds the flags above, bound to `o`.
void AddSecurityFlags(core::ArgParser& args, SecurityOptions* o);
// The flags that reproduce `o` on a child process's command line (empty ones left out).
std::vector<std::string> SecurityFlags(const SecurityOptions& o);

// Loaded key material. Cheap to copy.
class Security {
 public:
  enum class Role { kServer, kClient };
  // Reads and checks the files of `o` (errors name the flag and the file). No options: plaintext,
  // no token.
  static absl::StatusOr<Security> Load(const SecurityOptions& o, Role role);

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
  bool tls_ = false;
  std::string cert_pem_, key_pem_, ca_pem_, server_name_, token_;
};

// True for addresses that never leave the machine (127.0.0.0/8, ::1, localhost).
bool IsLoopbackHost(const std::string& host);

}  // namespace fanout::server
