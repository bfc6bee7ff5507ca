#include "daemon/core/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

namespace fsaudit {
namespace {
std::string errno_text(const std::string& what, const std::filesystem::path& p) {
  return what + " " + p.string() + ": " + std::strerror(errno);
}

// Reads straight into the string, growing it as needed: no 64 KiB buffer on the caller's stack (a
// worker's stack pages stay touched for good, and a profiler's stack copy lost every caller).
// `short_read_ends`: a read that returns less than it asked for is the end (sysfs attributes).
Result<std::string> read_whole(const std::filesystem::path& path, std::size_t max_bytes, bool short_read_ends) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return err(errno_text("cannot open", path));
  std::string out(std::min<std::size_t>(max_bytes + 1, 4096), '\0');
  std::size_t len = 0;
  while (true) {
    if (len == out.size()) out.resize(std::min<std::size_t>(out.size() * 2, max_bytes + 1));
    ssize_t n = ::read(fd, out.data() + len, out.size() - len);
    if (n < 0) {
      if (errno == EINTR) continue;
      auto e = errno_text("cannot read", path);
      ::close(fd);
      return err(e);
    }
    len += static_cast<std::size_t>(n);
    if (len > max_bytes) {
      ::close(fd);
      return err("file too large: " + path.string());
    }
    if (n == 0 || (short_read_ends && len < out.size())) break;
  }
  ::close(fd);
  out.resize(len);
  return out;
}

}  // namespace

Result<std::string> read_file(const std::filesystem::path& path, std::size_t max_bytes) {
  return read_whole(path, max_bytes, false);
}

Result<std::string> read_sysfs_attribute(const std::filesystem::path& path, std::size_t max_bytes) {
  return read_whole(path, max_bytes, true);
}

Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view data, int mode) {
  std::error_code ec;
  auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  std::filesystem::create_directories(dir, ec);
  if (ec) return err("cannot create directory " + dir.string() + ": " + ec.message());
  std::random_device rd;
  std::string tmp_name = ".";
  tmp_name += path.filename().string();
  tmp_name += ".tmp.";
  tmp_name += std::to_string(rd());
  auto tmp = dir / tmp_name;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return err(errno_text("cannot create", tmp));
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      auto e = errno_text("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return err(e);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    auto e = errno_text("cannot fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return err(e);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    auto e = errno_text("cannot rename into", path);
    ::unlink(tmp.c_str());
    return err(e);
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

}  // namespace fsaudit
