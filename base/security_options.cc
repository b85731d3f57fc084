#include "base/security_options.h"

#include <cstdlib>

#include "base/cli.h"
#include "base/strings.h"

namespace fanout::base {
namespace {

struct Item {
  const char* flag;
  const char* env;
  std::string SecurityOptions::*field;
  const char* help;
};

constexpr Item kItems[] = {
    {"tls-cert", "FANOUT_TLS_CERT", &SecurityOptions::tls_cert,
     "PEM certificate chain (servers: serve TLS; clients: mutual TLS)"},
    {"tls-key", "FANOUT_TLS_KEY", &SecurityOptions::tls_key, "PEM private key of --tls-cert"},
    {"tls-ca", "FANOUT_TLS_CA", &SecurityOptions::tls_ca,
     "PEM CA bundle (clients: verify servers, TLS on; servers: require client certificates)"},
    {"tls-server-name", "FANOUT_TLS_SERVER_NAME", &SecurityOptions::tls_server_name,
     "clients: the name in servers' certificates, when not the host dialled"},
    {"auth-token-file", "FANOUT_AUTH_TOKEN_FILE", &SecurityOptions::auth_token_file,
     "file holding the shared token (servers: required of every call; clients: sent)"},
};

}  // namespace

void FillSecurityFrom(const std::function<const char*(const char*)>& getenv, SecurityOptions* o) {
  for (const Item& it : kItems) {
    const char* v = getenv(it.env);
    if (v != nullptr && *v != '\0') o->*it.field = v;
  }
}

void FillSecurityFromEnvironment(SecurityOptions* o) { FillSecurityFrom(&std::getenv, o); }

void AddSecurityFlags(ArgParser& args, SecurityOptions* o) {
  FillSecurityFromEnvironment(o);
  for (const Item& it : kItems) args.AddString(it.flag, &(o->*it.field), StrCat(it.help, " [", it.env, "]"));
}

std::vector<std::string> SecurityEnv(const SecurityOptions& o) {
  std::vector<std::string> out;
  for (const Item& it : kItems) {
    if (!(o.*it.field).empty()) out.push_back(StrCat(it.env, "=", o.*it.field));
  }
  return out;
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

std::string MissingProtection(bool tls, bool token) {
  if (tls && token) return "";
  if (!tls && !token) return "TLS or an auth token";
  return !tls ? "TLS (the token travels in the clear)" : "an auth token";
}

bool SecretsEqual(std::string_view presented, std::string_view expected) {
  unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  const size_t n = expected.empty() ? 1 : expected.size();
  for (size_t i = 0; i < presented.size(); ++i) {
    diff |= static_cast<unsigned char>(presented[i] ^ (expected.empty() ? 0 : expected[i % n]));
  }
  return diff == 0;
}

}  // namespace fanout::base
