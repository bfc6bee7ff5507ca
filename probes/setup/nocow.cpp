#include "probes/setup/nocow.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>

namespace fsaudit::setup {

namespace fs = std::filesystem;

namespace {

// The inode flags of `p`, or -errno. O_NOATIME: examining an entry must not even touch its atime.
int inode_flags(const fs::path& p, bool dir, int& flags) {
  int base = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (dir ? O_DIRECTORY : 0);
  int fd = ::open(p.c_str(), base | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = ::open(p.c_str(), base);  // O_NOATIME needs ownership or CAP_FOWNER
  if (fd < 0) return -errno;
  int f = 0;
  int rc = ::ioctl(fd, FS_IOC_GETFLAGS, &f);
  int e = errno;
  ::close(fd);
  if (rc != 0) return -e;
  flags = f;
  return 0;
}

}  // namespace

NocowScan scan_nocow(const fs::path& root, const NocowOptions& o) {
  NocowScan s;
  std::deque<std::pair<fs::path, int>> dirs{{root, 0}};
  auto note_error = [&](const fs::path& p, const std::string& what) {
    if (s.errors.size() < 5) s.errors.push_back(p.string() + ": " + what);
  };
  while (!dirs.empty()) {
    auto [dir, depth] = dirs.front();
    dirs.pop_front();
    std::error_code ec;
    fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    if (ec) {
      note_error(dir, ec.message());
      continue;
    }
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) {
        note_error(dir, ec.message());
        break;
      }
      if (s.examined >= static_cast<std::uint64_t>(o.max_entries)) {
        s.truncated = true;
        return s;
      }
      const auto& p = it->path();
      if (o.skip.count(p.string())) continue;
      auto st = it->symlink_status(ec);
      if (ec) continue;
      bool is_dir = fs::is_directory(st), is_file = fs::is_regular_file(st);
      if (!is_dir && !is_file) continue;
      ++s.examined;
      int flags = 0;
      if (int rc = inode_flags(p, is_dir, flags); rc < 0) {
        note_error(p, std::strerror(-rc));
        continue;
      }
      if (flags & FS_NOCOW_FL) {
        ++s.nocow;
        if (s.examples.size() < o.max_examples) s.examples.push_back(p.string() + (is_dir ? "/" : ""));
      }
      if (is_dir && depth < o.max_depth) dirs.emplace_back(p, depth + 1);
    }
  }
  return s;
}

}  // namespace fsaudit::setup
