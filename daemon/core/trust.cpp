#include "daemon/core/trust.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fsaudit {

namespace fs = std::filesystem;

namespace {

std::string octal(mode_t m) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", static_cast<unsigned>(m & 07777));
  return b;
}

}  // namespace

Result<void> check_trusted_file(const fs::path& p, uid_t euid) {
  fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  for (const fs::path& x : {p, dir}) {
    struct stat st {};
    if (::stat(x.c_str(), &st) != 0)
      return err("cannot stat " + x.string() + ": " + std::strerror(errno), ErrorKind::refused);
    bool is_dir = S_ISDIR(st.st_mode);
    bool owner_ok = st.st_uid == 0 || (euid != 0 && st.st_uid == euid);
    if (!owner_ok)
      return err(x.string() + " is owned by uid " + std::to_string(st.st_uid) + ", not root" +
                     (euid != 0 ? " or uid " + std::to_string(euid) + " (this process)" : std::string()) +
                     ": fix with `chown root:root " + x.string() + "`",
                 ErrorKind::refused);
    bool sticky_dir = is_dir && (st.st_mode & S_ISVTX);
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky_dir)
      return err(x.string() + " (owner uid " + std::to_string(st.st_uid) + ", mode " + octal(st.st_mode) +
                     ") is writable by group or others: fix with `chmod go-w " + x.string() + "`",
                 ErrorKind::refused);
  }
  return {};
}

Result<void> check_trusted_executable(const fs::path& p, uid_t euid) {
  if (!p.is_absolute()) return err(p.string() + " is not an absolute path", ErrorKind::refused);
  std::error_code ec;
  fs::path real = fs::canonical(p, ec);
  if (ec) return err("cannot resolve " + p.string() + ": " + ec.message(), ErrorKind::refused);
  for (const fs::path& path : {p.lexically_normal(), real}) {
    // check_trusted_file checks a file and its directory: walking up, each directory in turn.
    for (fs::path x = path; x.has_relative_path(); x = x.parent_path())
      if (auto trusted = check_trusted_file(x, euid); !trusted) return trusted;
  }
  return {};
}

Result<void> check_trusted_directory(const fs::path& dir, uid_t euid) {
  if (!dir.is_absolute()) return err(dir.string() + " is not an absolute path", ErrorKind::refused);
  fs::path x = dir.lexically_normal();
  std::error_code ec;
  while (x.has_relative_path() && !fs::exists(fs::symlink_status(x, ec))) x = x.parent_path();
  return check_trusted_executable(x, euid);
}

}  // namespace fsaudit
