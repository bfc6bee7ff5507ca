#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit {

// One read of a kernel (sysfs/procfs) file. Absent, unreadable and malformed are three outcomes:
// only absent (ENOENT: the kernel is older, the feature is off) may be silent; a file that is there
// but cannot be read (EACCES, EIO, ...) or holds junk is a failure whose reason names the file and
// the errno or the text. "Not readable" is never "nothing there".
struct FileRead {
  enum class State { ok, absent, unreadable };
  State state = State::absent;
  std::filesystem::path path;
  std::string text;  // ok: the bytes read
  int error = 0;     // absent/unreadable: the errno (or EFBIG for a file over the limit)

  static FileRead content(std::filesystem::path p, std::string text);
  static FileRead failure(std::filesystem::path p, int error);  // ENOENT becomes absent

  bool ok() const { return state == State::ok; }
  bool absent() const { return state == State::absent; }
  bool unreadable() const { return state == State::unreadable; }
  // "cannot read <path>: Permission denied (errno 13)", "<path> does not exist"; "" when ok.
  std::string reason() const;
  // ok -> the text; absent -> nullopt; unreadable -> the error with the reason.
  Result<std::optional<std::string>> optional_text() const;
  // ok -> the text; absent or unreadable -> the error with the reason.
  Result<std::string> required_text() const;
};

// How a probe reads one attribute; tests and the fuzzers inject absent/errno/content per file.
using AttributeReader = std::function<FileRead(const std::filesystem::path&)>;

// A sysfs text attribute (read_sysfs_attribute) or, with `whole_file`, any file read to its end
// (read_file: procfs files that come in pieces).
FileRead read_attribute(const std::filesystem::path& path, std::size_t max_bytes = 64 << 10, bool whole_file = false);
// The reader probes use by default: read_attribute with its defaults.
const AttributeReader& sysfs_reader();

// Typed numbers from a read: the trimmed text must be the whole number ("%u\n", "%lld\n").
// absent -> nullopt (the caller decides whether that is allowed); unreadable -> the read's reason;
// anything else -> "<path> is '<text>', not a number".
Result<std::optional<std::uint64_t>> read_u64(const FileRead& r);
Result<std::optional<std::int64_t>> read_i64(const FileRead& r);

// Reads a whole (small) file; sysfs and procfs files are fine. The error names the path and errno text.
Result<std::string> read_file(const std::filesystem::path& path, std::size_t max_bytes = 16 << 20);
// A sysfs text attribute (one value, which the kernel prints whole into the first read): a read that
// returns less than it asked for is the end, so open, read, close (read_file's extra read to see the
// end was a quarter of the system calls of the per-filesystem probes). Not for procfs or binary
// attributes, which may come in pieces.
Result<std::string> read_sysfs_attribute(const std::filesystem::path& path, std::size_t max_bytes = 64 << 10);

// Durable replace: write a temp file beside it, fsync, rename over, fsync the directory.
// Used for every piece of state that must survive a crash or restart.
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view data, int mode = 0644);

// The names in a directory, sorted; none when it does not exist or cannot be read (sysfs trees,
// where an absent directory means "nothing of that kind").
std::vector<std::string> sorted_entries(const std::filesystem::path& dir);

}  // namespace fsaudit
