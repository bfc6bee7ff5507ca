#include "probes/latency/sampler.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fsaudit::latency {

std::string_view state_name(State s) {
  switch (s) {
    case State::ok: return "ok";
    case State::read_only: return "read_only";
    case State::fill_threshold: return "fill_threshold";
    case State::no_space: return "no_space";
    case State::io_error: return "io_error";
    case State::io_budget: return "io_budget";
    case State::stuck: return "stuck";
    case State::error: return "error";
  }
  return "error";
}

const std::vector<std::string>& state_names() {
  static const std::vector<std::string> v = {"ok",       "read_only", "fill_threshold", "no_space",
                                             "io_error", "io_budget", "stuck",          "error"};
  return v;
}

State classify_errno(int e) {
  switch (e) {
    case EROFS: return State::read_only;
    case ENOSPC:
    case EDQUOT: return State::no_space;
    case EIO: return State::io_error;
    default: return State::error;
  }
}

std::optional<Mode> parse_mode(std::string_view s) {
  if (s == "io_uring_fsync") return Mode::io_uring_fsync;
  if (s == "o_dsync") return Mode::o_dsync;
  return std::nullopt;
}

std::uint64_t mono_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

namespace {

IoFailure failure(int e, const std::string& what, const std::filesystem::path& p) {
  return IoFailure{e, what + " " + p.string() + ": " + std::strerror(e)};
}

struct AlignedBuf {
  void* p = nullptr;
  explicit AlignedBuf(std::size_t n) {
    if (::posix_memalign(&p, kBlock, n) != 0) p = nullptr;
  }
  ~AlignedBuf() { std::free(p); }
  AlignedBuf(const AlignedBuf&) = delete;
  AlignedBuf& operator=(const AlignedBuf&) = delete;
};

// Non-repeating, non-zero content so that compressing or deduplicating filesystems really write.
// splitmix64: a tenth of mt19937_64's cost, which showed in profiles for the 1 MiB fill of each stack.
void fill_random(void* p, std::size_t n, std::uint64_t seed) {
  auto* w = static_cast<std::uint64_t*>(p);
  for (std::size_t i = 0; i < n / 8; ++i) {
    std::uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    w[i] = z ^ (z >> 31);
  }
}

// The probe-file fill's source: allocated and made random once per thread (in a sampler process,
// once for its life), then only stamped per use. A fresh 1 MiB buffer per fill was 256 page faults
// and a munmap per stack: 5 ms of CPU per fill on a virtual machine whose page faults are dear
// (measured), against 0.2 ms for the random data alone and 4 us for the stamps.
constexpr std::size_t kFillChunk = 256 << 10;

void* fill_source() {
  thread_local AlignedBuf buf(kFillChunk);
  thread_local bool filled = false;
  if (buf.p && !filled) {
    fill_random(buf.p, kFillChunk, mono_ns());
    filled = true;
  }
  return buf.p;
}

// A different first word in every block of every write: no layer can skip or deduplicate a block
// as one it has seen (the rest is random, so compression gains nothing either).
void stamp_blocks(void* p, std::size_t n, std::uint64_t salt) {
  auto* w = static_cast<std::uint64_t*>(p);
  for (std::size_t b = 0; b < n / kBlock; ++b) w[b * (kBlock / 8)] = salt + b * 0x9e3779b97f4a7c15ull;
}

}  // namespace

ProbeFile::~ProbeFile() { close(); }

void ProbeFile::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::optional<IoFailure> ProbeFile::open(const std::filesystem::path& dir, std::uint64_t size, int extra_flags,
                                         std::uint64_t* bytes_written) {
  close();
  if (bytes_written) *bytes_written = 0;
  path_ = path_in(dir);
  size_ = size;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return failure(errno, "mkdir", dir);
  struct stat ds;
  if (::lstat(dir.c_str(), &ds) != 0) return failure(errno, "stat", dir);
  if (!S_ISDIR(ds.st_mode)) return IoFailure{ENOTDIR, dir.string() + " exists and is not a directory"};
  int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | extra_flags, 0600);
  if (fd < 0) return failure(errno, "open", path_);
  fd_ = fd;
  struct stat st;
  if (::fstat(fd_, &st) != 0) return failure(errno, "fstat", path_);
  if (!S_ISREG(st.st_mode)) return IoFailure{EINVAL, path_.string() + " is not a regular file"};
  auto have = static_cast<std::uint64_t>(st.st_size);
  if (have > size) {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) return failure(errno, "truncate", path_);
  } else if (have < size) {
    // Fill the file once with real data (not fallocate): samples must overwrite written blocks, or
    // every sample would also pay for converting an unwritten extent (ext4/XFS) and read as slower
    // than an application's overwrite+fsync. An interrupted fill resumes from the current size.
    struct statvfs vfs;
    if (::fstatvfs(fd_, &vfs) == 0 &&
        static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize < size - have + (1u << 20)) {
      if (have == 0) (void)ProbeFile::remove(dir);  // best effort: the ENOSPC below is the report
      return IoFailure{ENOSPC, "not enough free space for the " + std::to_string(size >> 20) + " MiB probe file " +
                                   path_.string()};
    }
    void* const src = fill_source();
    if (!src) return IoFailure{ENOMEM, "out of memory"};
    const std::uint64_t nonce = size ^ mono_ns();
    // O_DIRECT where the filesystem takes it: no copy into the page cache (most of the fill's CPU)
    // and no dirty cache the host's own data would give way to; buffered where it does not (EINVAL
    // or EOPNOTSUPP: FUSE, ZFS before 2.3; an unaligned tail).
    int direct = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECT);
    struct CloseDirect {
      int& fd;
      ~CloseDirect() {
        if (fd >= 0) ::close(fd);
      }
    } close_direct{direct};
    for (std::uint64_t off = have / kBlock * kBlock; off < size;) {
      auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kFillChunk, size - off));
      stamp_blocks(src, n, off ^ nonce);
      auto w = ::pwrite(direct >= 0 ? direct : fd_, src, n, static_cast<off_t>(off));
      if (w < 0 && (errno == EINVAL || errno == EOPNOTSUPP) && direct >= 0) {
        ::close(direct);
        direct = -1;
        continue;
      }
      if (w < 0) {
        int e = errno;
        if (e == ENOSPC || e == EDQUOT) {  // give the space back rather than hold a partial file
          close();
          (void)ProbeFile::remove(dir);  // best effort: the write's failure is the report
        }
        return failure(e, "write", path_);
      }
      off += static_cast<std::uint64_t>(w);
      if (bytes_written) *bytes_written += static_cast<std::uint64_t>(w);
    }
    if (::fsync(fd_) != 0) return failure(errno, "fsync", path_);
  }
  return std::nullopt;
}

Result<void> ProbeFile::remove(const std::filesystem::path& dir) {
  auto p = path_in(dir);
  if (::unlink(p.c_str()) != 0 && errno != ENOENT) return err("remove " + p.string() + ": " + std::strerror(errno));
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST)
    return err("remove " + dir.string() + ": " + std::strerror(errno));
  return {};
}

namespace {

// One ring per thread, kept between samples. Setting a ring up and tearing it down for each sample,
// with the io-wq worker thread the kernel starts for a ring's first fsync, cost more CPU than the
// write+fsync itself (fsaudit-latency-sample --one-per-call, docs/benchmarks.md). A ring inherited
// over fork is the parent's (its memory is shared with it): the child leaves it and makes its own.
class KeptRing {
 public:
  ~KeptRing() { drop(); }
  // The ring, or nullptr and the errno of io_uring_queue_init.
  io_uring* get(int* err) {
    if (ok_ && owner_ != ::getpid()) ok_ = false;
    if (!ok_) {
      int r = io_uring_queue_init(4, &ring_, 0);
      if (r < 0) {
        *err = -r;
        return nullptr;
      }
      ok_ = true;
      owner_ = ::getpid();
    }
    return &ring_;
  }
  // After a failed sample: completions may still be queued, so the next sample starts on a new ring.
  void drop() {
    if (ok_ && owner_ == ::getpid()) io_uring_queue_exit(&ring_);
    ok_ = false;
  }

 private:
  io_uring ring_{};
  pid_t owner_ = 0;
  bool ok_ = false;
};

KeptRing& kept_ring() {
  thread_local KeptRing k;
  return k;
}

class UringWriter final : public SyncWriter {
 public:
  UringWriter(int fd, io_uring& ring) : fd_(fd), ring_(ring), buf_(kBlock) { fill_random(buf_.p, kBlock, mono_ns()); }
  int write_sync(std::uint64_t offset) override {
    int e = submit_and_reap(offset);
    if (e != 0) kept_ring().drop();
    return e;
  }
  std::string mode() const override { return "io_uring_fsync"; }

 private:
  int submit_and_reap(std::uint64_t offset) {
    if (!buf_.p) return ENOMEM;
    // Vary the block content a little so no layer can skip an identical rewrite.
    static_cast<std::uint64_t*>(buf_.p)[0] = offset ^ mono_ns();
    io_uring_sqe* w = io_uring_get_sqe(&ring_);
    io_uring_sqe* f = w ? io_uring_get_sqe(&ring_) : nullptr;
    if (!w || !f) return EBUSY;
    io_uring_prep_write(w, fd_, buf_.p, kBlock, offset);
    w->flags |= IOSQE_IO_LINK;  // the fsync starts only after the write completed
    w->user_data = 1;
    io_uring_prep_fsync(f, fd_, 0);
    f->user_data = 2;
    int r = io_uring_submit_and_wait(&ring_, 2);
    if (r < 0) return -r;
    int result = 0;
    for (int got = 0; got < 2;) {
      io_uring_cqe* cqe = nullptr;
      int e = io_uring_wait_cqe(&ring_, &cqe);
      if (e == -EINTR) continue;
      if (e < 0) return -e;
      if (cqe->user_data == 1 && cqe->res >= 0 && static_cast<std::uint64_t>(cqe->res) != kBlock && result == 0)
        result = EIO;  // a short write: treat as an I/O failure (the fsync was cancelled)
      if (cqe->res < 0 && cqe->res != -ECANCELED && result == 0) result = -cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      ++got;
    }
    return result;
  }

  int fd_;
  io_uring& ring_;
  AlignedBuf buf_;
};

class PwriteWriter final : public SyncWriter {
 public:
  // dsync: fd opened with O_DSYNC, so the pwrite itself is durable; otherwise pwrite + fsync.
  PwriteWriter(int fd, bool dsync, bool owns) : fd_(fd), dsync_(dsync), owns_(owns), buf_(kBlock) {
    fill_random(buf_.p, kBlock, mono_ns());
  }
  ~PwriteWriter() override {
    if (owns_ && fd_ >= 0) ::close(fd_);
  }
  std::string mode() const override { return dsync_ ? "o_dsync" : "pwrite_fsync"; }
  int write_sync(std::uint64_t offset) override {
    if (!buf_.p) return ENOMEM;
    static_cast<std::uint64_t*>(buf_.p)[0] = offset ^ mono_ns();
    auto w = ::pwrite(fd_, buf_.p, kBlock, static_cast<off_t>(offset));
    if (w < 0) return errno;
    if (static_cast<std::uint64_t>(w) != kBlock) return EIO;
    if (!dsync_ && ::fsync(fd_) != 0) return errno;
    return 0;
  }

 private:
  int fd_;
  bool dsync_, owns_;
  AlignedBuf buf_;
};

}  // namespace

OpenedWriter make_writer(Mode mode, ProbeFile& file) {
  auto fallback = [&](const std::string& why) {
    return OpenedWriter{std::make_unique<PwriteWriter>(file.fd(), false, false), why + "; using pwrite+fsync"};
  };
  if (mode == Mode::o_dsync) {
    // A second descriptor with O_DSYNC on the same (already allocated) file.
    int fd = ::open(file.path().c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_DSYNC);
    if (fd < 0) return fallback(std::string("open O_DSYNC failed (") + std::strerror(errno) + ")");
    return {std::make_unique<PwriteWriter>(fd, true, true), ""};
  }
  int err = 0;
  io_uring* ring = kept_ring().get(&err);
  if (!ring) return fallback(std::string("io_uring unavailable (") + std::strerror(err) + ")");
  return {std::make_unique<UringWriter>(file.fd(), *ring), ""};
}

int direct_read(int fd, std::uint64_t offset) {
  AlignedBuf buf(kBlock);
  if (!buf.p) return ENOMEM;
  auto r = ::pread(fd, buf.p, kBlock, static_cast<off_t>(offset));
  if (r < 0) return errno;
  return 0;
}

}  // namespace fsaudit::latency
