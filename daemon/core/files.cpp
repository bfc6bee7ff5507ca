#include "daemon/core/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "daemon/core/strings.hpp"

namespace fsaudit {
namespace {
std::string errno_text(const std::string& what, const std::filesystem::path& p) {
  return what + " " + p.string() + ": " + std::strerror(errno);
}

// Reads straight into the string, growing it as needed: no 64 KiB buffer on the caller's stack (a
// worker's stack pages stay touched for good, and a profiler's stack copy lost every caller).
// `short_read_ends`: a read that returns less than it asked for is the end (sysfs attributes).
FileRead read_whole(const std::filesystem::path& path, std::size_t max_bytes, bool short_read_ends) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FileRead::failure(path, errno);
  std::string out(std::min<std::size_t>(max_bytes + 1, 4096), '\0');
  std::size_t len = 0;
  while (true) {
    if (len == out.size()) out.resize(std::min<std::size_t>(out.size() * 2, max_bytes + 1));
    ssize_t n = ::read(fd, out.data() + len, out.size() - len);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      // ENOENT from read() (a sysfs attribute whose object went away) is still a failed read.
      auto r = FileRead::failure(path, e);
      r.state = FileRead::State::unreadable;
      return r;
    }
    len += static_cast<std::size_t>(n);
    if (len > max_bytes) {
      ::close(fd);
      return FileRead::failure(path, EFBIG);
    }
    if (n == 0 || (short_read_ends && len < out.size())) break;
  }
  ::close(fd);
  out.resize(len);
  return FileRead::content(path, std::move(out));
}

template <class T>
Result<std::optional<T>> read_number(const FileRead& r, std::optional<T> (*parse)(std::string_view)) {
  if (r.absent()) return std::optional<T>();
  if (!r.ok()) return err(r.reason());
  auto t = trim(r.text);
  if (auto n = parse(t)) return std::optional<T>(*n);
  return err(r.path.string() + " is '" + std::string(t.substr(0, 40)) + (t.size() > 40 ? "...'" : "'") +
             ", not a number");
}

}  // namespace

FileRead FileRead::content(std::filesystem::path p, std::string text) {
  FileRead r;
  r.state = State::ok;
  r.path = std::move(p);
  r.text = std::move(text);
  return r;
}

FileRead FileRead::failure(std::filesystem::path p, int error) {
  FileRead r;
  r.state = error == ENOENT ? State::absent : State::unreadable;
  r.path = std::move(p);
  r.error = error;
  return r;
}

std::string FileRead::reason() const {
  switch (state) {
    case State::ok: return "";
    case State::absent: return "cannot open " + path.string() + ": " + std::strerror(ENOENT);
    case State::unreadable:
      if (error == EFBIG) return "file too large: " + path.string();
      return "cannot read " + path.string() + ": " + std::strerror(error) + " (errno " + std::to_string(error) + ")";
  }
  return "";
}

Result<std::optional<std::string>> FileRead::optional_text() const {
  if (absent()) return std::optional<std::string>();
  if (!ok()) return err(reason());
  return std::optional<std::string>(text);
}

Result<std::string> FileRead::required_text() const {
  if (!ok()) return err(reason());
  return text;
}

FileRead read_attribute(const std::filesystem::path& path, std::size_t max_bytes, bool whole_file) {
  return read_whole(path, max_bytes, !whole_file);
}

const AttributeReader& sysfs_reader() {
  static const AttributeReader r = [](const std::filesystem::path& p) { return read_attribute(p); };
  return r;
}

Result<std::optional<std::uint64_t>> read_u64(const FileRead& r) { return read_number<std::uint64_t>(r, parse_u64); }
Result<std::optional<std::int64_t>> read_i64(const FileRead& r) { return read_number<std::int64_t>(r, parse_i64); }

Result<std::string> read_file(const std::filesystem::path& path, std::size_t max_bytes) {
  return read_whole(path, max_bytes, false).required_text();
}

Result<std::string> read_sysfs_attribute(const std::filesystem::path& path, std::size_t max_bytes) {
  return read_whole(path, max_bytes, true).required_text();
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

std::vector<std::string> sorted_entries(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace fsaudit
