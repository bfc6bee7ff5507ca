#include "daemon/http/web_config.hpp"

#include <crypt.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#include "daemon/config/reader.hpp"
#include "daemon/core/trust.hpp"

namespace fsaudit::http {
namespace {


// RFC 9110 5.6.2: a field name is a token.
bool is_token(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    bool ok = std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
    if (!ok || c == 0) return false;
  }
  return true;
}

// Whether `name: value` may be added to every response, else why not. A CR or LF in a value would
// end the header early and let the rest become headers (or a body) of its own; the framing headers
// are fsauditd's to set.
Result<void> check_header(const std::string& name, const std::string& value) {
  if (!is_token(name))
    return err("'" + name + "' is not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only); fix the name");
  std::string lower;
  for (unsigned char c : name) lower += static_cast<char>(std::tolower(c));
  for (const char* own : {"content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "trailer", "te",
                          "content-type", "content-encoding"})
    if (lower == own) return err("'" + name + "' is set by fsauditd for each response; remove it");
  for (unsigned char c : value) {
    if (c == '\r' || c == '\n')
      return err("the value of '" + name + "' contains a line break (CR/LF), which would start another header; remove it");
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return err("the value of '" + name + "' contains control character 0x" + "0123456789abcdef"[c >> 4] +
                 "0123456789abcdef"[c & 15] + "; remove it");
  }
  return {};
}

bool is_bcrypt(const std::string& h) {
  return h.size() == 60 && h[0] == '$' && h[1] == '2' && (h[2] == 'a' || h[2] == 'b' || h[2] == 'y') && h[3] == '$';
}

}  // namespace

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  if (!is_bcrypt(hash)) return false;
  crypt_data data{};
  const char* out = crypt_r(password.c_str(), hash.c_str(), &data);
  if (!out || out[0] == '*') return false;
  std::size_t n = std::strlen(out);
  if (n != hash.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(out[i] ^ hash[i]);
  return diff == 0;
}

Result<WebConfig> parse_web_config(const std::string& yaml_text, const std::string& label,
                                   const std::filesystem::path& base_dir) {
  WebConfig w;
  w.source = label;
  auto resolve = [&](const std::string& p) -> std::filesystem::path {
    if (p.empty()) return {};
    std::filesystem::path path(p);
    return path.is_absolute() ? path : base_dir / path;
  };
  try {
    auto root = config::open_document(yaml_text, label);
    if (root.has("tls_server_config")) {
      auto t = root.section("tls_server_config");
      TlsConfig tls;
      tls.cert_file = resolve(t.string("cert_file", ""));
      tls.key_file = resolve(t.string("key_file", ""));
      tls.client_ca_file = resolve(t.string("client_ca_file", ""));
      tls.client_auth_type = t.choice("client_auth_type", "NoClientCert",
                                      {"NoClientCert", "RequestClientCert", "RequireAnyClientCert",
                                       "VerifyClientCertIfGiven", "RequireAndVerifyClientCert"});
      tls.min_version = t.choice("min_version", "TLS12", {"TLS10", "TLS11", "TLS12", "TLS13"});
      tls.max_version = t.string("max_version", "");
      if (!tls.max_version.empty() && tls.max_version != "TLS12" && tls.max_version != "TLS13" &&
          tls.max_version != "TLS10" && tls.max_version != "TLS11")
        t.fail("max_version", "expected TLS10, TLS11, TLS12 or TLS13");
      for (const char* k : {"cipher_suites", "curve_preferences", "prefer_server_cipher_suites", "cert", "key", "client_allowed_sans"})
        if (t.has(k)) t.fail(k, "not supported by fsauditd (OpenSSL's defaults apply); remove it");
      t.finish();
      if (tls.cert_file.empty() || tls.key_file.empty())
        root.fail("tls_server_config", "needs both cert_file and key_file");
      if ((tls.client_auth_type == "RequireAndVerifyClientCert" || tls.client_auth_type == "VerifyClientCertIfGiven") &&
          tls.client_ca_file.empty())
        root.fail("tls_server_config", "client_auth_type " + tls.client_auth_type + " needs client_ca_file");
      for (const auto& f : {tls.cert_file, tls.key_file, tls.client_ca_file}) {
        if (f.empty()) continue;
        std::ifstream in(f);
        if (!in) root.fail("tls_server_config", "cannot read " + f.string() + ": " + std::strerror(errno));
      }
      w.tls = tls;
    }
    if (root.has("http_server_config")) {
      auto h = root.section("http_server_config");
      if (h.has("http2") && h.boolean("http2", false)) h.fail("http2", "HTTP/2 is not supported by fsauditd; set false or remove");
      w.headers = h.string_map("headers");
      for (const auto& [name, value] : w.headers)
        if (auto allowed = check_header(name, value); !allowed) h.section("headers").fail(name, allowed.error());
      h.finish();
    }
    w.basic_auth_users = root.string_map("basic_auth_users");
    for (const auto& [user, hash] : w.basic_auth_users) {
      if (user.find(':') != std::string::npos) root.fail("basic_auth_users", "user name '" + user + "' contains ':'");
      if (!is_bcrypt(hash))
        root.fail("basic_auth_users", "the password of '" + user +
                                          "' must be a bcrypt hash ($2y$...; e.g. htpasswd -nbBC 10 '' PASSWORD | tr -d ':')");
    }
    root.finish();
  } catch (const std::exception& e) {
    return err(e.what());
  }
  return w;
}

Result<WebConfig> load_web_config(const std::filesystem::path& file) {
  // It decides whether /metrics needs TLS and a password: whoever may change it may remove both. The
  // same rule as the main config (docs/security.md).
  if (auto trusted = check_trusted_file(file, ::geteuid()); !trusted)
    return err_in("refusing web config " + file.string() + ": ", trusted);
  std::ifstream in(file);
  if (!in) return err("cannot read web config " + file.string() + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_web_config(ss.str(), file.string(), file.parent_path());
}

}  // namespace fsaudit::http
