#include "probes/canary/raw_writer.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace fsaudit::canary {

std::string validate_raw_write(const RawWriteRequest& req, const std::string& resolved,
                               const std::vector<RawWriteGrant>& grants) {
  if (req.device.empty() || req.device[0] != '/') return "device path must be absolute";
  if (req.bytes.empty()) return "no bytes to write";
  if (req.bytes.size() > kMaxRawWrite)
    return "at most " + std::to_string(kMaxRawWrite) + " bytes per request, got " + std::to_string(req.bytes.size());
  if (req.offset > UINT64_MAX - req.bytes.size()) return "offset overflows";
  if (req.expect_current && req.expect_current->size() != req.bytes.size())
    return "expected-current bytes differ in length from the bytes to write";
  bool device_granted = false;
  for (const auto& g : grants) {
    if (g.device != resolved) continue;
    device_granted = true;
    if (req.offset >= g.begin && req.offset + req.bytes.size() <= g.end) return "";
  }
  if (!device_granted) return resolved + " is not a verified member of this canary";
  return "offset " + std::to_string(req.offset) + "+" + std::to_string(req.bytes.size()) +
         " lies outside the located canary block on " + resolved;
}

Result<RawWriteReceipt> raw_write(const RawWriteRequest& req, const std::vector<RawWriteGrant>& grants) {
  std::error_code ec;
  auto resolved = std::filesystem::canonical(req.device, ec);
  if (ec) return err("refused: cannot resolve " + req.device + ": " + ec.message());
  std::string why = validate_raw_write(req, resolved.string(), grants);
  if (!why.empty()) return err("refused: " + why);

  int fd = ::open(resolved.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return err("refused: cannot open " + resolved.string() + " for writing: " + std::strerror(errno));
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return err("refused: stat failed");
  std::uint64_t size = 0;
  if (S_ISBLK(st.st_mode)) {
    if (::ioctl(fd, BLKGETSIZE64, &size) != 0) return err("refused: BLKGETSIZE64 failed");
  } else if (S_ISREG(st.st_mode)) {
    size = static_cast<std::uint64_t>(st.st_size);
  } else {
    return err("refused: " + resolved.string() + " is neither a block device nor a regular file");
  }
  if (req.offset + req.bytes.size() > size) return err("refused: range lies past the end of " + resolved.string());

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
  if (r != static_cast<ssize_t>(n)) return err("refused: cannot read back the sector before writing: " + std::string(std::strerror(errno)));
  auto* p = static_cast<unsigned char*>(buf) + (req.offset - start);
  RawWriteReceipt rec;
  rec.device = resolved.string();
  rec.offset = req.offset;
  rec.before.assign(p, p + req.bytes.size());
  if (req.expect_current && *req.expect_current != rec.before)
    return err("refused: the bytes on " + resolved.string() + " at " + std::to_string(req.offset) +
               " are no longer the expected ones; not touching them");
  std::memcpy(p, req.bytes.data(), req.bytes.size());
  ssize_t w = ::pwrite(fd, buf, n, static_cast<off_t>(start));
  if (w != static_cast<ssize_t>(n)) return err("write to " + resolved.string() + " failed: " + std::strerror(errno));
  if (::fsync(fd) != 0) return err("fsync of " + resolved.string() + " failed: " + std::strerror(errno));
  rec.after = req.bytes;
  return rec;
}

}  // namespace fsaudit::canary
