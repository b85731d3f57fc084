// The transport-security flags shared by every fanout process that serves or calls the graph
// service, and by the launcher that hands them on. Plain options only: loading the files and
// making gRPC credentials is rpc/security.h's job, so that the launcher needs no gRPC.
//
//   --tls-cert FILE        PEM certificate chain of this process (servers: turns TLS on;
//                          clients: presented for mutual TLS)
//   --tls-key FILE         its PEM private key
//   --tls-ca FILE          PEM CA bundle: clients verify servers with it (TLS on); servers
//                          require and verify client certificates signed by it (mutual TLS)
//   --tls-server-name NAME clients: the name servers' certificates carry, when it is not the
//                          host of the address dialled (e.g. certificates for a DNS name,
//                          ip_config by IP)
//   --auth-token-file FILE a file holding one line, the token; servers refuse calls without it
//                          (UNAUTHENTICATED), clients send it ("authorization: Bearer <token>")
//
// Each flag defaults to an environment variable (FANOUT_TLS_CERT, FANOUT_TLS_KEY, FANOUT_TLS_CA,
// FANOUT_TLS_SERVER_NAME, FANOUT_AUTH_TOKEN_FILE), which is how fanout-launch hands them to every
// process it starts, servers and trainers alike (base::JobEnv carries them with the job's layout).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fanout::base {

class ArgParser;

struct SecurityOptions {
  std::string tls_cert, tls_key, tls_ca, tls_server_name;
  std::string auth_token_file;

  bool any() const { return !tls_cert.empty() || !tls_key.empty() || !tls_ca.empty() || !auth_token_file.empty(); }
  bool tls() const { return !tls_cert.empty() || !tls_ca.empty(); }
  bool token() const { return !auth_token_file.empty(); }
};

// Fills `o` from the environment variables above (empty ones left alone): for processes that
// take no flags of their own (a Python script under fanout-launch).
void FillSecurityFromEnvironment(SecurityOptions* o);
// The same from `getenv` (JobEnv::FromEnvironment's lookup).
void FillSecurityFrom(const std::function<const char*(const char*)>& getenv, SecurityOptions* o);
// Fills `o` from the environment variables above (empty ones left alone), then adds the flags.
void AddSecurityFlags(ArgParser& args, SecurityOptions* o);
// The environment variables that reproduce `o` ("NAME=VALUE", empty ones left out).
std::vector<std::string> SecurityEnv(const SecurityOptions& o);

// True for addresses that never leave the machine (127.0.0.0/8, ::1, localhost).
bool IsLoopbackHost(const std::string& host);

// What a listener beyond loopback lacks, for the warning servers and the launcher print:
// "TLS or an auth token", "TLS (the token travels in the clear)", "an auth token", or "" when it
// has both.
std::string MissingProtection(bool tls, bool token);

// Compares a presented secret with the expected one in time that depends only on their
// lengths, so that timing does not tell how much of a guess was right.
bool SecretsEqual(std::string_view presented, std::string_view expected);

}  // namespace fanout::base
