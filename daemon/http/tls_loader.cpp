#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "daemon/http/tls.hpp"

namespace fsaudit::http {

std::string tls_module_path() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string build_dir = FSAUDIT_BUILD_DIR "/";
  if (ec || exe.string().compare(0, build_dir.size(), build_dir) == 0) return FSAUDIT_TLS_MODULE_BUILT;
  // Installed: PREFIX/sbin/fsauditd and PREFIX/LIBDIR/fsaudit/fsaudit-tls.so, wherever PREFIX is
  // (/usr for the package, /usr/local for `cmake --install`).
  return (exe.parent_path().parent_path() / FSAUDIT_TLS_MODULE_IN_PREFIX).string();
}

Result<std::unique_ptr<TlsContext>> load_tls(const TlsConfig& cfg) {
  static std::mutex mu;
  static TlsMakeFn make = nullptr;
  {
    std::lock_guard l(mu);
    if (!make) {
      auto path = tls_module_path();
      // Never closed: contexts and sessions made by it live until the server ends.
      void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h)
        return err("cannot load fsaudit's TLS module: " + std::string(::dlerror()) +
                   " (it comes with fsauditd; reinstall the package, or serve plain HTTP)");
      make = reinterpret_cast<TlsMakeFn>(::dlsym(h, kTlsMakeSymbol));
      if (!make) return err("fsaudit's TLS module " + path + " has no " + kTlsMakeSymbol + ": not fsaudit's, or from another version");
    }
  }
  std::string error;
  std::unique_ptr<TlsContext> ctx(make(cfg, error));
  if (!ctx) return err(error.empty() ? std::string("the TLS module made no context") : error);
  return ctx;
}

}  // namespace fsaudit::http
