#pragma once
// A fake host's files for the sysfs/procfs fuzzers: the input chooses, per file, absent / errno /
// content. Records are separated by NUL bytes: "name=content" is a file holding content, "name!N"
// one whose read fails with errno N (N = ENOENT: absent); a name not in the input is absent.
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"

namespace fsaudit::fuzz {

class HostFiles {
 public:
  explicit HostFiles(std::string_view text) {
    std::size_t pos = 0;
    while (pos <= text.size()) {
      auto end = text.find('\0', pos);
      if (end == std::string_view::npos) end = text.size();
      auto rec = text.substr(pos, end - pos);
      auto at = rec.find_first_of("=!");
      if (at != std::string_view::npos) {
        std::string name(rec.substr(0, at));
        if (rec[at] == '=') files_[name] = FileRead::content(name, std::string(rec.substr(at + 1)));
        else files_[name] = FileRead::failure(name, static_cast<int>(parse_u64(rec.substr(at + 1)).value_or(EIO) % 200));
      }
      pos = end + 1;
    }
  }
  // Reads `path` by its name relative to `root` ("errors_count", "dev-0/io_errors").
  AttributeReader reader(std::filesystem::path root) {
    return [this, root](const std::filesystem::path& p) {
      auto rel = p.lexically_relative(root).string();
      auto it = files_.find(rel);
      FileRead r = it == files_.end() ? FileRead::failure(p, ENOENT) : it->second;
      r.path = p;
      if (r.unreadable()) unreadable_read_.insert(rel);
      return r;
    };
  }
  // Files the code under test read and got an errno other than ENOENT from.
  const std::set<std::string>& unreadable_read() const { return unreadable_read_; }

 private:
  std::map<std::string, FileRead> files_;
  std::set<std::string> unreadable_read_;
};

// An unreadable file the code read must show in the failure reason it gave.
inline void check_unreadable_reported(const HostFiles& h, bool failed, const std::string& reason) {
  if (h.unreadable_read().empty()) return;
  if (!failed) {
    std::fprintf(stderr, "unreadable %s taken for a good read\n", h.unreadable_read().begin()->c_str());
    std::abort();
  }
  for (const auto& f : h.unreadable_read())
    if (reason.find(f) != std::string::npos) return;
  std::fprintf(stderr, "reason '%s' names none of the unreadable files\n", reason.c_str());
  std::abort();
}

}  // namespace fsaudit::fuzz
