#include "probes/canary/scanner.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "probes/canary/pattern.hpp"

namespace fsaudit::canary {

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct AlignedBuf {
  void* p = nullptr;
  explicit AlignedBuf(std::size_t n) {
    if (::posix_memalign(&p, 4096, n) != 0) p = nullptr;
  }
  ~AlignedBuf() { std::free(p); }
  AlignedBuf(const AlignedBuf&) = delete;
  AlignedBuf& operator=(const AlignedBuf&) = delete;
};

Result<std::uint64_t> size_of_fd(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return err("cannot stat " + path + ": " + std::strerror(errno));
  if (S_ISBLK(st.st_mode)) {
    std::uint64_t sz = 0;
    if (::ioctl(fd, BLKGETSIZE64, &sz) != 0) return err("BLKGETSIZE64 on " + path + ": " + std::strerror(errno));
    return sz;
  }
  if (S_ISREG(st.st_mode)) return static_cast<std::uint64_t>(st.st_size);
  return err(path + " is neither a block device nor a regular file");
}

}  // namespace

Result<std::uint64_t> device_size(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return err("cannot open " + path + ": " + std::strerror(errno));
  return size_of_fd(f.fd, path);
}

Result<ScanResult> scan_device(const std::string& path, std::uint64_t nonce, const ScanOptions& opt) {
  if (opt.chunk_bytes == 0 || opt.chunk_bytes % 4096 || opt.align == 0 || opt.chunk_bytes % opt.align)
    return err("scan chunk must be a non-zero multiple of 4096 and of the alignment");
  Fd f{::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC)};
  if (f.fd < 0) return err("cannot open " + path + " with O_DIRECT: " + std::strerror(errno));
  auto size = size_of_fd(f.fd, path);
  if (!size) return err(size.error());
  std::uint64_t total = *size;
  if (opt.limit_bytes && opt.limit_bytes < total) total = opt.limit_bytes;

  unsigned qd = std::max(1u, std::min(opt.queue_depth, 256u));
  io_uring ring;
  int rc = ::io_uring_queue_init(qd, &ring, 0);
  if (rc < 0) return err(std::string("io_uring_queue_init: ") + std::strerror(-rc));
  struct RingGuard {
    io_uring* r;
    ~RingGuard() { ::io_uring_queue_exit(r); }
  } rg{&ring};

  AlignedBuf mem(static_cast<std::size_t>(qd) * opt.chunk_bytes);
  if (!mem.p) return err("cannot allocate scan buffers");
  std::vector<iovec> iov(qd);
  for (unsigned i = 0; i < qd; ++i) {
    iov[i].iov_base = static_cast<char*>(mem.p) + static_cast<std::size_t>(i) * opt.chunk_bytes;
    iov[i].iov_len = opt.chunk_bytes;
  }
  bool fixed = ::io_uring_register_buffers(&ring, iov.data(), qd) == 0;

  ScanResult res;
  res.device = path;
  std::vector<std::uint64_t> slot_offset(qd);
  std::vector<unsigned> free_slots;
  for (unsigned i = 0; i < qd; ++i) free_slots.push_back(qd - 1 - i);
  std::uint64_t next = 0;
  unsigned inflight = 0;
  std::string failure;
  auto t0 = std::chrono::steady_clock::now();

  auto submit_more = [&]() {
    bool any = false;
    while (!free_slots.empty() && next < total) {
      unsigned s = free_slots.back();
      io_uring_sqe* sqe = ::io_uring_get_sqe(&ring);
      if (!sqe) break;
      free_slots.pop_back();
      std::uint64_t len = std::min<std::uint64_t>(opt.chunk_bytes, total - next);
      len = (len + 511) / 512 * 512;
      if (fixed) ::io_uring_prep_read_fixed(sqe, f.fd, iov[s].iov_base, static_cast<unsigned>(len), next, static_cast<int>(s));
      else ::io_uring_prep_read(sqe, f.fd, iov[s].iov_base, static_cast<unsigned>(len), next);
      ::io_uring_sqe_set_data64(sqe, s);
      slot_offset[s] = next;
      next += std::min<std::uint64_t>(opt.chunk_bytes, total - next);
      ++inflight;
      any = true;
    }
    if (any) ::io_uring_submit(&ring);
  };

  submit_more();
  while (inflight > 0) {
    io_uring_cqe* cqe = nullptr;
    int w = ::io_uring_wait_cqe(&ring, &cqe);
    if (w < 0) {
      if (w == -EINTR) continue;
      failure = std::string("io_uring_wait_cqe: ") + std::strerror(-w);
      break;
    }
    unsigned s = static_cast<unsigned>(::io_uring_cqe_get_data64(cqe));
    int n = cqe->res;
    ::io_uring_cqe_seen(&ring, cqe);
    --inflight;
    if (n < 0) {
      failure = "read at offset " + std::to_string(slot_offset[s]) + " of " + path + ": " + std::strerror(-n);
      break;
    }
    std::uint64_t want = std::min<std::uint64_t>(opt.chunk_bytes, total - slot_offset[s]);
    std::size_t got = std::min<std::size_t>(static_cast<std::size_t>(n), static_cast<std::size_t>(want));
    if (got < want && slot_offset[s] + got < total) {
      // Short read in the middle: read the rest synchronously (rare).
      ssize_t r = ::pread(f.fd, static_cast<char*>(iov[s].iov_base) + got, static_cast<std::size_t>(want - got),
                          static_cast<off_t>(slot_offset[s] + got));
      if (r > 0) got += static_cast<std::size_t>(r);
    }
    const unsigned char* b = static_cast<const unsigned char*>(iov[s].iov_base);
    for (std::size_t off = 0; off + kHeaderBytes <= got; off += opt.align) {
      std::uint64_t m;
      std::memcpy(&m, b + off, 8);
      if (m != kMagic) continue;
      if (auto idx = header_index(b + off, nonce)) res.hits.push_back({*idx, slot_offset[s] + off});
    }
    res.bytes += got;
    free_slots.push_back(s);
    if (opt.stop.stop_requested()) {
      failure = "scan cancelled";
      break;
    }
    submit_more();
  }
  // Drain whatever is still in flight before the buffers go away.
  while (inflight > 0) {
    io_uring_cqe* cqe = nullptr;
    if (::io_uring_wait_cqe(&ring, &cqe) < 0) break;
    ::io_uring_cqe_seen(&ring, cqe);
    --inflight;
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!failure.empty()) return err(failure);
  return res;
}

Result<std::vector<unsigned char>> read_direct(const std::string& path, std::uint64_t offset, std::size_t len) {
  Fd f{::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC)};
  if (f.fd < 0) return err("cannot open " + path + " with O_DIRECT: " + std::strerror(errno));
  std::uint64_t start = offset / 4096 * 4096;
  std::uint64_t end = (offset + len + 4095) / 4096 * 4096;
  std::size_t n = static_cast<std::size_t>(end - start);
  AlignedBuf buf(n);
  if (!buf.p) return err("out of memory");
  std::size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(f.fd, static_cast<char*>(buf.p) + done, n - done, static_cast<off_t>(start + done));
    if (r < 0) return err("O_DIRECT read of " + path + " at " + std::to_string(start + done) + ": " + std::strerror(errno));
    if (r == 0) break;
    done += static_cast<std::size_t>(r);
  }
  if (done < (offset - start) + len) return err("read past the end of " + path);
  const unsigned char* p = static_cast<const unsigned char*>(buf.p) + (offset - start);
  return std::vector<unsigned char>(p, p + len);
}

}  // namespace fsaudit::canary
