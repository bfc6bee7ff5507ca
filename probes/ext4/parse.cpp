// Pure parser of the ext4 sysfs error files (parse.hpp); the probe reads them.
#include "probes/ext4/parse.hpp"

#include "daemon/core/strings.hpp"

namespace fsaudit::ext4 {

namespace {

// A file that is there must hold what the kernel prints ("%u\n", "%lld\n"): anything else is junk
// or a cut read, reported rather than taken as 0.
Result<std::optional<ErrorRecord>> record(const std::map<std::string, std::string>& f, const std::string& which) {
  auto get = [&](const std::string& k) -> std::optional<std::string_view> {
    auto it = f.find(which + "_error_" + k);
    if (it == f.end()) return std::nullopt;
    return trim(it->second);
  };
  std::string bad;
  auto num = [&](const std::string& k, auto parse, auto& dst) {
    auto v = get(k);
    if (!v || !bad.empty()) return;
    if (auto n = parse(*v)) dst = *n;
    else bad = which + "_error_" + k + " is '" + std::string(v->substr(0, 40)) + "', not a number";
  };
  if (!get("time")) return std::optional<ErrorRecord>();
  ErrorRecord r;
  num("time", parse_i64, r.time);
  if (auto v = get("func")) r.function = std::string(*v);
  num("line", parse_u64, r.line);
  num("ino", parse_u64, r.inode);
  num("block", parse_u64, r.block);
  num("errcode", parse_i64, r.errcode);
  if (!bad.empty()) return err("ext4 sysfs: " + bad);
  return std::optional<ErrorRecord>(std::move(r));
}

}  // namespace

Result<bool> parse_ext4_options_shutdown(std::string_view text) {
  // The kernel prints at least "rw" or "ro" and ends every option with a newline: anything less
  // is a cut read, not "not shut down".
  if (trim(text).empty()) return err("ext4 options: empty");
  if (text.back() != '\n') return err("ext4 options: ends inside a line (cut short): '" + std::string(trim(lines(text).back()).substr(0, 40)) + "'");
  for (auto line : lines(text))
    if (trim(line) == "shutdown") return true;
  return false;
}

std::string errno_name(std::int64_t code) {
  // ext4 stores its own codes, not errno values (fs/ext4/ext4.h EXT4_ERR_*, ext4_errno_to_code()).
  static const char* const names[] = {"",      "UNKNOWN", "EIO",    "ENOMEM",    "EFSBADCRC", "EFSCORRUPTED",
                                      "ENOSPC", "ENOKEY", "EROFS",  "EFBIG",     "EEXIST",    "ERANGE",
                                      "EOVERFLOW", "EBUSY", "ENOTDIR", "ENOTEMPTY", "ESHUTDOWN", "EFAULT"};
  if (code >= 0 && code < static_cast<std::int64_t>(sizeof(names) / sizeof(names[0]))) return names[code];
  return std::to_string(code);
}

Result<ErrorState> parse_ext4_sysfs(const std::map<std::string, std::string>& f) {
  auto it = f.find("errors_count");
  // Absent only: an errors_count that is there but unreadable fails in the read (read_ext4_sysfs_files).
  if (it == f.end()) return err("ext4 sysfs: no errors_count file (kernel too old?)");
  auto n = parse_u64(trim(it->second));
  if (!n) return err("ext4 sysfs: errors_count is '" + std::string(trim(it->second)) + "', not a number");
  ErrorState s;
  s.errors_count = *n;
  for (auto [which, dst] : {std::pair{"first", &s.first}, std::pair{"last", &s.last}}) {
    auto r = record(f, which);
    if (!r) return err(r.error());
    *dst = std::move(*r);
  }
  for (auto [name, dst] : {std::pair{"warning_count", &s.warning_count}, std::pair{"msg_count", &s.msg_count}}) {
    auto it = f.find(name);
    if (it == f.end()) continue;
    *dst = parse_u64(trim(it->second));
    if (!*dst) return err("ext4 sysfs: " + std::string(name) + " is '" + std::string(trim(it->second)) + "', not a number");
  }
  return s;
}

}  // namespace fsaudit::ext4
