// fsaudit-tls.so: the HTTP server's TLS on OpenSSL (see tls.hpp for why it is a module of its own).
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <exception>

#include "daemon/http/tls.hpp"

namespace fsaudit::http {
namespace {

int tls_version(const std::string& v) {
  if (v == "TLS10") return TLS1_VERSION;
  if (v == "TLS11") return TLS1_1_VERSION;
  if (v == "TLS13") return TLS1_3_VERSION;
  return TLS1_2_VERSION;
}

std::string openssl_error() {
  unsigned long e = ERR_get_error();
  if (!e) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

class OpenSslConn final : public TlsConn {
 public:
  explicit OpenSslConn(SSL* ssl) : ssl_(ssl) {}
  ~OpenSslConn() override {
    if (handshaken_) SSL_shutdown(ssl_);
    SSL_free(ssl_);
  }
  bool handshake() override {
    handshaken_ = SSL_accept(ssl_) == 1;
    ERR_clear_error();
    return handshaken_;
  }
  long read(char* buf, std::size_t n) override { return SSL_read(ssl_, buf, static_cast<int>(n)); }
  long write(const char* buf, std::size_t n) override { return SSL_write(ssl_, buf, static_cast<int>(n)); }

 private:
  SSL* ssl_;
  bool handshaken_ = false;
};

class OpenSslContext final : public TlsContext {
 public:
  explicit OpenSslContext(SSL_CTX* ctx) : ctx_(ctx) {}
  ~OpenSslContext() override { SSL_CTX_free(ctx_); }
  std::unique_ptr<TlsConn> wrap(int fd) override {
    SSL* ssl = SSL_new(ctx_);
    if (!ssl) return nullptr;
    SSL_set_fd(ssl, fd);
    return std::make_unique<OpenSslConn>(ssl);
  }

 private:
  SSL_CTX* ctx_;
};

TlsContext* make(const TlsConfig& t, std::string& error) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) {
    error = "cannot create a TLS context: " + openssl_error();
    return nullptr;
  }
  auto fail = [&](std::string why) -> TlsContext* {
    SSL_CTX_free(ctx);
    error = std::move(why);
    return nullptr;
  };
  if (SSL_CTX_use_certificate_chain_file(ctx, t.cert_file.c_str()) != 1)
    return fail("cannot load certificate " + t.cert_file.string() + ": " + openssl_error());
  if (SSL_CTX_use_PrivateKey_file(ctx, t.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    return fail("cannot load key " + t.key_file.string() + " (does it belong to " + t.cert_file.string() +
                "?): " + openssl_error());
  if (SSL_CTX_check_private_key(ctx) != 1)
    return fail("key " + t.key_file.string() + " does not match certificate " + t.cert_file.string());
  SSL_CTX_set_min_proto_version(ctx, tls_version(t.min_version));
  if (!t.max_version.empty()) SSL_CTX_set_max_proto_version(ctx, tls_version(t.max_version));
  if (!t.client_ca_file.empty() && SSL_CTX_load_verify_locations(ctx, t.client_ca_file.c_str(), nullptr) != 1)
    return fail("cannot load client CA " + t.client_ca_file.string() + ": " + openssl_error());
  int mode = SSL_VERIFY_NONE;
  if (t.client_auth_type == "RequestClientCert" || t.client_auth_type == "VerifyClientCertIfGiven") mode = SSL_VERIFY_PEER;
  if (t.client_auth_type == "RequireAnyClientCert" || t.client_auth_type == "RequireAndVerifyClientCert")
    mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  // "Request"/"RequireAny" accept any certificate, as the exporter toolkit does.
  bool verify = t.client_auth_type == "VerifyClientCertIfGiven" || t.client_auth_type == "RequireAndVerifyClientCert";
  SSL_verify_cb accept_any = [](int, X509_STORE_CTX*) { return 1; };
  SSL_CTX_set_verify(ctx, mode, verify ? nullptr : accept_any);
  return new OpenSslContext(ctx);
}

}  // namespace
}  // namespace fsaudit::http

// No exception crosses into the server: it reads `error`.
extern "C" fsaudit::http::TlsContext* fsaudit_tls_make(const fsaudit::http::TlsConfig& cfg, std::string& error) {
  try {
    return fsaudit::http::make(cfg, error);
  } catch (const std::exception& e) {
    error = std::string("TLS module: ") + e.what();
    return nullptr;
  }
}
