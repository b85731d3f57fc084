#include "rpc/security.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "base/status.h"
#include "base/strings.h"

namespace fanout::rpc {

using base::StrCat;

namespace {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat(flag, " ", path, ": cannot open"));
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > (1 << 20)) return absl::InvalidArgumentError(StrCat(flag, " ", path, ": over 1 MiB, not a key file"));
  if (s.empty()) return absl::InvalidArgumentError(StrCat(flag, " ", path, ": empty"));
  return s;
}

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  ASSIGN_OR_RETURN(std::string s, ReadSmallFile(path, flag));
  if (s.find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(StrCat(flag, " ", path, ": not a PEM file (no -----BEGIN line)"));
  }
  return s;
}

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  ASSIGN_OR_RETURN(std::string s, ReadSmallFile(path, "--auth-token-file"));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  if (s.size() < 16) {
    return absl::InvalidArgumentError(StrCat("--auth-token-file ", path, ": the token is ", s.size(),
                                             " characters; use at least 16 (e.g. openssl rand -hex 32)"));
  }
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(StrCat("--auth-token-file ", path, ": character ", i,
                                               " is not printable ASCII; the token must be one line without spaces"));
    }
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    std::fprintf(stderr, "fanout: warning: --auth-token-file %s is readable by other users (chmod 600 it)\n",
                 path.c_str());
  }
  return s;
}

}  // namespace

absl::StatusOr<Security> Security::Load(const SecurityOptions& o, Role role) {
  Security s;
  s.loaded_ = true;
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together: give both or neither");
  }
  if (!o.tls_cert.empty()) {
    ASSIGN_OR_RETURN(s.cert_pem_, ReadPem(o.tls_cert, "--tls-cert"));
    ASSIGN_OR_RETURN(s.key_pem_, ReadPem(o.tls_key, "--tls-key"));
  }
  if (!o.tls_ca.empty()) {
    ASSIGN_OR_RETURN(s.ca_pem_, ReadPem(o.tls_ca, "--tls-ca"));
  }
  if (role == Role::kServer) {
    if (!o.tls_ca.empty() && o.tls_cert.empty()) {
      return absl::InvalidArgumentError(
          "--tls-ca on a server requires client certificates, which needs TLS: give --tls-cert and --tls-key too");
    }
    s.tls_ = !s.cert_pem_.empty();
  } else {
    s.tls_ = !s.cert_pem_.empty() || !s.ca_pem_.empty();
    s.server_name_ = o.tls_server_name;
  }
  if (!o.auth_token_file.empty()) {
    ASSIGN_OR_RETURN(s.token_, ReadToken(o.auth_token_file));
  }
  return s;
}

std::string Security::Describe() const {
  std::string t = mutual_tls() ? "mutual TLS" : tls_ ? "TLS" : "plaintext";
  return token_.empty() ? t : StrCat(t, ", token");
}

std::shared_ptr<grpc::ServerCredentials> Security::ServerCredentials() const {
  if (!tls_) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions o(ca_pem_.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                      : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  o.pem_root_certs = ca_pem_;
  o.pem_key_cert_pairs.push_back({key_pem_, cert_pem_});
  return grpc::SslServerCredentials(o);
}

std::shared_ptr<grpc::ChannelCredentials> Security::ChannelCredentials() const {
  if (!tls_) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = ca_pem_;
  o.pem_private_key = key_pem_;
  o.pem_cert_chain = cert_pem_;
  return grpc::SslCredentials(o);
}

void Security::ApplyTo(grpc::ChannelArguments* args) const {
  if (tls_ && !server_name_.empty()) args->SetSslTargetNameOverride(server_name_);
}

}  // namespace fanout::rpc
