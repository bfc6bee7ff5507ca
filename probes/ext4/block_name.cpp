#include "probes/ext4/block_name.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace fsaudit::fshealth {

namespace fs = std::filesystem;

std::vector<std::string> block_name_candidates(const HostPaths& host, const Target& t) {
  std::vector<std::string> out;
  auto add = [&](const std::string& n) {
    if (!n.empty() && n != "." && n != ".." && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  std::error_code ec;
  if (t.dev_major != 0) {
    auto link = host.sys("dev/block") / (std::to_string(t.dev_major) + ":" + std::to_string(t.dev_minor));
    auto target = fs::read_symlink(link, ec);
    if (!ec) add(target.filename().string());
  }
  if (t.source.starts_with("/dev/")) {
    auto canon = fs::canonical(host.devfs / t.source.substr(5), ec);
    if (!ec) add(canon.filename().string());
  }
  add(fs::path(t.source).filename().string());
  return out;
}

std::string sysfs_fs_dir_name(const HostPaths& host, const Target& t, const std::string& fs_dir) {
  std::error_code ec;
  for (const auto& n : block_name_candidates(host, t))
    if (fs::is_directory(host.sys("fs") / fs_dir / n, ec)) return n;
  return {};
}

}  // namespace fsaudit::fshealth
