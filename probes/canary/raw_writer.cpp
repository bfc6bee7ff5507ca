#include "probes/canary/raw_writer.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <sys/sysmacros.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <cstring>
#include <filesystem>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/canary/identity.hpp"

namespace fsaudit::canary {

Result<void> validate_raw_write(const RawWriteRequest& req, const std::string& resolved,
                                const std::vector<RawWriteGrant>& grants) {
  if (req.device.empty() || req.device[0] != '/') return err("device path must be absolute", ErrorKind::refused);
  if (req.bytes.empty()) return err("no bytes to write", ErrorKind::refused);
  if (req.bytes.size() > kMaxRawWrite)
    return err("at most " + std::to_string(kMaxRawWrite) + " bytes per request, got " + std::to_string(req.bytes.size()),
               ErrorKind::refused);
  if (req.offset > UINT64_MAX - req.bytes.size()) return err("offset overflows", ErrorKind::refused);
  if (req.expect_current && req.expect_current->size() != req.bytes.size())
    return err("expected-current bytes differ in length from the bytes to write", ErrorKind::refused);
  bool device_granted = false;
  for (const auto& g : grants) {
    if (g.device != resolved) continue;
    device_granted = true;
    if (req.offset >= g.begin && req.offset + req.bytes.size() <= g.end) return {};
  }
  if (!device_granted) return err(resolved + " is not a verified member of this canary", ErrorKind::refused);
  return err("offset " + std::to_string(req.offset) + "+" + std::to_string(req.bytes.size()) +
                 " lies outside the located canary block on " + resolved,
             ErrorKind::refused);
}

Result<RawWriteGrant> grant_for(const DeviceIdentity& m, std::uint64_t begin, std::uint64_t end) {
  RawWriteGrant g;
  g.device = m.resolved;
  g.begin = begin;
  g.end = end;
  if (m.kind == DeviceKind::file) {
    g.ino_dev = m.fs_dev;
    g.ino = m.inode;
    if (g.ino == 0) return err("no inode recorded for " + m.resolved);
    return g;
  }
  g.rdev = ::makedev(m.major, m.minor);
  if (m.major == 0 && m.minor == 0) return err("no device number for " + m.resolved);
  if (m.kind == DeviceKind::loop) {
    struct stat bs {};
    if (m.backing_file.empty() || ::stat(m.backing_file.c_str(), &bs) != 0)
      return err("cannot stat the backing file of " + m.resolved + " (" + m.backing_file + ")");
    g.ino_dev = bs.st_dev;
    g.ino = bs.st_ino;
  }
  return g;
}

std::vector<FileWriter> writers_of(const HostPaths& host, std::uint64_t dev, std::uint64_t ino, long except_pid) {
  namespace fs = std::filesystem;
  std::vector<FileWriter> out;
  std::error_code ec;
  for (fs::directory_iterator p(host.procfs, ec), end; !ec && p != end; p.increment(ec)) {
    const std::string name = p->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos || name.size() > 9) continue;
    long pid = std::stol(name);
    if (pid == except_pid) continue;
    bool writes = false;
    std::error_code fec;
    for (fs::directory_iterator f(p->path() / "fd", fec), fend; !fec && f != fend && !writes; f.increment(fec)) {
      struct stat st {};
      // stat() follows the fd's magic link to the open file itself (also when deleted or renamed).
      if (::stat(f->path().c_str(), &st) != 0 || st.st_dev != dev || st.st_ino != ino) continue;
      auto info = read_file(p->path() / "fdinfo" / f->path().filename(), 4096);
      if (!info) continue;
      for (auto line : lines(*info)) {
        if (!line.starts_with("flags:")) continue;
        auto flags = std::strtoul(std::string(trim(line.substr(6))).c_str(), nullptr, 8);
        if ((flags & O_ACCMODE) != O_RDONLY) writes = true;
      }
    }
    if (!writes) continue;
    FileWriter w;
    w.pid = pid;
    w.comm = std::string(trim(read_file(p->path() / "comm", 256).value_or("?")));
    const std::string status = read_file(p->path() / "status", 16384).value_or("");
    for (auto line : lines(status))
      if (line.starts_with("Uid:")) w.uid = std::strtol(std::string(trim(line.substr(4))).c_str(), nullptr, 10);
    out.push_back(std::move(w));
  }
  return out;
}

bool expected_writer_of_exported_vdev(const FileWriter& w) { return w.comm == "zfs-fuse" && w.uid == 0; }

namespace {

// Whether the open descriptor is the granted device; `refused` with why not.
Result<void> identity_check(int fd, const struct stat& st, const RawWriteGrant& g) {
  if (S_ISBLK(st.st_mode)) {
    if (g.rdev == 0) return err("the grant carries no device number", ErrorKind::refused);
    if (st.st_rdev != g.rdev)
      return err("the opened device is " + std::to_string(::major(st.st_rdev)) + ":" + std::to_string(::minor(st.st_rdev)) +
                     ", the verified member was " + std::to_string(::major(g.rdev)) + ":" + std::to_string(::minor(g.rdev)),
                 ErrorKind::refused);
    if (g.ino != 0 || ::major(st.st_rdev) == 7) {
      struct loop_info64 li {};
      if (::ioctl(fd, LOOP_GET_STATUS64, &li) != 0)
        return err("LOOP_GET_STATUS64 failed: the loop device is detached", ErrorKind::refused);
      if (li.lo_inode != g.ino || li.lo_device != g.ino_dev)
        return err("the loop device is now backed by another file than the verified one", ErrorKind::refused);
    }
    return {};
  }
  if (S_ISREG(st.st_mode)) {
    if (g.ino == 0) return err("the grant carries no inode", ErrorKind::refused);
    if (st.st_ino != g.ino || st.st_dev != g.ino_dev)
      return err("the file is not the verified member (inode changed)", ErrorKind::refused);
    return {};
  }
  return err("neither a block device nor a regular file", ErrorKind::refused);
}

}  // namespace

Result<RawWriteReceipt> raw_write(const RawWriteRequest& req, const std::vector<RawWriteGrant>& grants) {
  std::error_code ec;
  auto resolved = std::filesystem::canonical(req.device, ec);
  if (ec) return err("refused: cannot resolve " + req.device + ": " + ec.message(), ErrorKind::refused);
  if (auto allowed = validate_raw_write(req, resolved.string(), grants); !allowed) return err_in("refused: ", allowed);

  const RawWriteGrant* grant = nullptr;
  for (const auto& g : grants)
    if (g.device == resolved.string() && req.offset >= g.begin && req.offset + req.bytes.size() <= g.end) grant = &g;
  struct stat pre {};
  bool excl = grant->exclusive && ::stat(resolved.c_str(), &pre) == 0 && S_ISBLK(pre.st_mode);
  int fd = -1;
  // A device scanner (blkid, zpool import) may hold the member exclusively for a moment: wait up
  // to 3 s for it; a mount or an md/dm holder does not go away and is refused.
  for (int i = 0; i < 30; ++i) {
    fd = ::open(resolved.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC | O_NOFOLLOW | (excl ? O_EXCL : 0));
    if (fd >= 0 || errno != EBUSY || !excl) break;
    ::usleep(100000);
  }
  if (fd < 0)
    return err("refused: cannot open " + resolved.string() + (excl ? " exclusively" : "") + " for writing: " +
                   std::strerror(errno) + (excl && errno == EBUSY ? " (mounted or held by another user)" : ""),
               ErrorKind::refused);
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return err("refused: stat failed", ErrorKind::refused);
  if (auto same = identity_check(fd, st, *grant); !same) return err_in("refused: " + resolved.string() + ": ", same);
  // A file vdev has no O_EXCL: an offline canary's file must have no writer but us (and zfs-fuse's
  // descriptor of an exported pool); a writer's next write could land on top of ours.
  if (grant->exclusive && S_ISREG(st.st_mode))
    for (const auto& w : writers_of(grant->host, st.st_dev, st.st_ino, static_cast<long>(::getpid())))
      if (!expected_writer_of_exported_vdev(w))
        return err("refused: " + resolved.string() + " is held open for writing by pid " + std::to_string(w.pid) + " (" +
                       w.comm + ", uid " + std::to_string(w.uid) +
                       "); a file vdev cannot be opened exclusively, so nothing else may write it",
                   ErrorKind::refused);
  std::uint64_t size = 0;
  if (S_ISBLK(st.st_mode)) {
    if (::ioctl(fd, BLKGETSIZE64, &size) != 0) return err("refused: BLKGETSIZE64 failed", ErrorKind::refused);
  } else if (S_ISREG(st.st_mode)) {
    size = static_cast<std::uint64_t>(st.st_size);
  } else {
    return err("refused: " + resolved.string() + " is neither a block device nor a regular file", ErrorKind::refused);
  }
  if (req.offset + req.bytes.size() > size) return err("refused: range lies past the end of " + resolved.string(), ErrorKind::refused);

  auto aligned_read = [&](std::uint64_t from, std::uint64_t to) -> Result<std::vector<unsigned char>> {
    std::uint64_t a = from / 4096 * 4096, b = std::min<std::uint64_t>((to + 4095) / 4096 * 4096, size);
    void* m = nullptr;
    if (::posix_memalign(&m, 4096, (b - a + 4095) / 4096 * 4096) != 0) return err("out of memory");
    std::unique_ptr<void, decltype(&std::free)> own(m, &std::free);
    ssize_t got = ::pread(fd, m, static_cast<std::size_t>(b - a), static_cast<off_t>(a));
    if (got != static_cast<ssize_t>(b - a)) return err(std::string("short read: ") + std::strerror(errno));
    auto* c = static_cast<unsigned char*>(m);
    return std::vector<unsigned char>(c + (from - a), c + (to - a));
  };
  if (grant->block) {
    if (grant->block->size() != grant->end - grant->begin) return err("refused: the grant's block has the wrong size", ErrorKind::refused);
    auto cur = aligned_read(grant->begin, grant->end);
    if (!cur) return err("refused: cannot read the granted block: " + cur.error(), ErrorKind::refused);
    if (*cur != *grant->block)
      return err("refused: the block at " + resolved.string() + "@" + std::to_string(grant->begin) +
                 " is not the located canary block any more", ErrorKind::refused);
  }

  std::uint64_t start = req.offset / 4096 * 4096;
  std::uint64_t end = (req.offset + req.bytes.size() + 4095) / 4096 * 4096;
  if (end > size) end = size;  // regular files may end mid-sector (never true for block devices)
  std::size_t n = static_cast<std::size_t>(end - start);
  void* buf = nullptr;
  if (::posix_memalign(&buf, 4096, (n + 4095) / 4096 * 4096) != 0) return err("out of memory");
  struct Free {
    void* p;
    ~Free() { std::free(p); }
  } freer{buf};
  ssize_t r = ::pread(fd, buf, n, static_cast<off_t>(start));
  if (r != static_cast<ssize_t>(n)) return err("refused: cannot read back the sector before writing: " + std::string(std::strerror(errno)), ErrorKind::refused);
  auto* p = static_cast<unsigned char*>(buf) + (req.offset - start);
  RawWriteReceipt rec;
  rec.device = resolved.string();
  rec.offset = req.offset;
  rec.before.assign(p, p + req.bytes.size());
  if (req.expect_current && *req.expect_current != rec.before)
    return err("refused: the bytes on " + resolved.string() + " at " + std::to_string(req.offset) +
               " are no longer the expected ones; not touching them", ErrorKind::refused);
  std::memcpy(p, req.bytes.data(), req.bytes.size());
  ssize_t w = ::pwrite(fd, buf, n, static_cast<off_t>(start));
  if (w != static_cast<ssize_t>(n)) return err("write to " + resolved.string() + " failed: " + std::strerror(errno));
  if (::fsync(fd) != 0) return err("fsync of " + resolved.string() + " failed: " + std::strerror(errno));
  rec.after = req.bytes;
  return rec;
}

}  // namespace fsaudit::canary
