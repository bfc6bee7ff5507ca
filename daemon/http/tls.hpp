#pragma once
// TLS for the HTTP server lives in a module of its own, fsaudit-tls.so, the only part of fsaudit
// linked with OpenSSL. The server loads it only when the web config asks for TLS, so a daemon that
// serves plain HTTP maps neither libssl nor libcrypto (1.7 MB resident once loaded, most of it data
// the dynamic loader relocates at load time, whether TLS is used or not).
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "daemon/core/result.hpp"
#include "daemon/http/web_config.hpp"

namespace fsaudit::http {

// One accepted connection's TLS session (it does not own the fd).
class TlsConn {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  virtual ~TlsConn() = default;
  // Both finish by `deadline` or fail, however the peer spaces its bytes (a per-recv timeout would
  // restart with every byte of a trickled handshake or record).
  virtual bool handshake(Deadline deadline) = 0;
  virtual long read(char* buf, std::size_t n, Deadline deadline) = 0;
  virtual long write(const char* buf, std::size_t n) = 0;
};

// Certificate, key and client-auth settings loaded once; a session per connection.
class TlsContext {
 public:
  virtual ~TlsContext() = default;
  virtual std::unique_ptr<TlsConn> wrap(int fd) = 0;  // nullptr when no session could be made
};

// The module's one entry point, looked up by name: nullptr and `error` set when the settings do
// not load (a certificate that is missing, a key that does not match it, ...).
using TlsMakeFn = TlsContext* (*)(const TlsConfig& cfg, std::string& error);
inline constexpr const char* kTlsMakeSymbol = "fsaudit_tls_make";

// Where the module is: the build tree's when this program runs from the build tree, else
// PREFIX/LIBDIR/fsaudit/ beside the installed PREFIX/sbin/fsauditd.
std::string tls_module_path();

// Loads the module (once per process; it stays loaded) and makes a context from `cfg`.
Result<std::unique_ptr<TlsContext>> load_tls(const TlsConfig& cfg);

}  // namespace fsaudit::http
