#pragma once
// The web configuration file in the format node_exporter's --web.config.file takes (the Prometheus
// exporter-toolkit format), limited to what fsauditd's HTTP server (civetweb + OpenSSL) can honour.
// Keys it cannot honour are errors, never silently ignored.
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "daemon/core/result.hpp"

namespace fsaudit::http {

struct TlsConfig {
  std::filesystem::path cert_file, key_file, client_ca_file;
  // NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert
  std::string client_auth_type = "NoClientCert";
  std::string min_version = "TLS12", max_version;  // TLS10..TLS13
};

struct WebConfig {
  std::optional<TlsConfig> tls;
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash ($2a$/$2b$/$2y$)
  std::map<std::string, std::string> headers;           // http_server_config.headers
  std::string source;
};

// Relative paths are resolved against the file's directory (as the exporter toolkit does). The
// certificate and key must be readable and every hash must be a bcrypt hash; errors name
// file:line:column.
Result<WebConfig> load_web_config(const std::filesystem::path& file);
Result<WebConfig> parse_web_config(const std::string& yaml_text, const std::string& label,
                                   const std::filesystem::path& base_dir);

// Checks `password` against a bcrypt hash with libxcrypt's crypt_r (constant-time compare).
bool bcrypt_matches(const std::string& password, const std::string& hash);

}  // namespace fsaudit::http
