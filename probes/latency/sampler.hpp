#pragma once
// The I/O side of the latency sampler: the preallocated probe file, and timed 4 KiB write+fsync
// samples through io_uring (WRITE linked to FSYNC) or an O_DSYNC file descriptor.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit::latency {

inline constexpr std::uint64_t kBlock = 4096;

// Why a sampler run did not sample. `ok` is the normal state.
// stuck: the stack's previous sample has not returned (a hung fsync); it is not sampled again until it does.
enum class State { ok, read_only, fill_threshold, no_space, io_error, io_budget, stuck, error };
std::string_view state_name(State s);
const std::vector<std::string>& state_names();
// EROFS -> read_only, ENOSPC/EDQUOT -> no_space, EIO -> io_error, everything else -> error.
State classify_errno(int e);

enum class Mode { io_uring_fsync, o_dsync };
std::optional<Mode> parse_mode(std::string_view s);

struct IoFailure {
  int err = 0;          // errno
  std::string message;  // "open /x/.fsaudit/latency.probe: Read-only file system"
  State state() const { return classify_errno(err); }
};

// <dir>/latency.probe, created (dir 0700, file 0600) and filled once with data to exactly `size` bytes. An
// existing larger file is truncated to `size`; the file is never extended beyond it. Not kept open
// between runs (an open file would block unmounting the target).
class ProbeFile {
 public:
  static std::filesystem::path path_in(const std::filesystem::path& dir) { return dir / "latency.probe"; }
  // Opens (creating/preallocating as needed). `bytes_written` gets the bytes written to fill the file
  // (counted against the I/O budget). ENOSPC while filling removes the partial file.
  std::optional<IoFailure> open(const std::filesystem::path& dir, std::uint64_t size, int extra_flags,
                                std::uint64_t* bytes_written);
  ~ProbeFile();
  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  void close();
  // Removes <dir>/latency.probe and <dir> if empty.
  static Result<void> remove(const std::filesystem::path& dir);

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::filesystem::path path_;
};

// Writes one 4 KiB block at `offset` and makes it durable. Returns 0 or an errno.
class SyncWriter {
 public:
  virtual ~SyncWriter() = default;
  virtual int write_sync(std::uint64_t offset) = 0;
  virtual std::string mode() const = 0;  // "io_uring_fsync", "o_dsync", "pwrite_fsync"
};

struct OpenedWriter {
  std::unique_ptr<SyncWriter> writer;
  std::string note;  // why the writer is pwrite+fsync instead of the mode asked for; "" when it is that mode
};

// Opens the writer for `file` (whose fd must stay open while the writer is used). io_uring mode falls
// back to pwrite+fsync when io_uring is unavailable (e.g. io_uring_disabled), and o_dsync mode when
// the file cannot be opened with O_DSYNC; the note says why.
OpenedWriter make_writer(Mode mode, ProbeFile& file);

// Reads one 4 KiB block at `offset` with O_DIRECT (fd opened with O_DIRECT). Returns 0 or an errno.
int direct_read(int fd, std::uint64_t offset);

// CLOCK_MONOTONIC in nanoseconds.
std::uint64_t mono_ns();

// Random 4 KiB-aligned offsets inside [0, size).
class OffsetPicker {
 public:
  explicit OffsetPicker(std::uint64_t seed) : rng_(seed) {}
  std::uint64_t next(std::uint64_t size) {
    std::uniform_int_distribution<std::uint64_t> d(0, size / kBlock - 1);
    return d(rng_) * kBlock;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace fsaudit::latency
