// fsaudit-tls.so: the HTTP server's TLS on OpenSSL (see tls.hpp for why it is a module of its own).
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>

#include <cerrno>
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

// Runs `op` (SSL_accept, SSL_read) on the socket made non-blocking, waiting in poll for what OpenSSL
// wants until `deadline`; -1 when the deadline passes first.
template <class Op>
int until_deadline(SSL* ssl, TlsConn::Deadline deadline, Op op) {
  int fd = SSL_get_fd(ssl);
  int fl = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  int r = -1;
  while (true) {
    r = op();
    if (r > 0) break;
    int e = SSL_get_error(ssl, r);
    short want = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (want == 0) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count() + 1;
    pollfd p{fd, want, 0};
    int n = left > 0 ? ::poll(&p, 1, static_cast<int>(left)) : 0;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      r = -1;
      break;
    }
  }
  ::fcntl(fd, F_SETFL, fl);
  return r;
}

class OpenSslConn final : public TlsConn {
 public:
  explicit OpenSslConn(SSL* ssl) : ssl_(ssl) {}
  ~OpenSslConn() override {
    if (handshaken_) SSL_shutdown(ssl_);
    SSL_free(ssl_);
  }
  bool handshake(Deadline deadline) override {
    handshaken_ = until_deadline(ssl_, deadline, [&] { return SSL_accept(ssl_); }) == 1;
    ERR_clear_error();
    return handshaken_;
  }
  long read(char* buf, std::size_t n, Deadline deadline) override {
    long r = until_deadline(ssl_, deadline, [&] { return SSL_read(ssl_, buf, static_cast<int>(n)); });
    ERR_clear_error();
    return r;
  }
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
