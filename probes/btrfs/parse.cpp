// Pure parsers of btrfs's sysfs error_stats and 'btrfs device stats' (parse.hpp).
#include "probes/btrfs/parse.hpp"

#include <array>
#include <map>

#include "daemon/core/strings.hpp"

namespace fsaudit::btrfs {

Result<DeviceErrors> parse_error_stats(std::string_view text) {
  DeviceErrors e;
  int seen = 0;
  for (auto line : lines(text)) {
    auto ws = split_ws(line);
    if (ws.size() != 2) continue;
    auto key = ws[0];
    std::uint64_t* dst = nullptr;
    if (key == "write_errs") dst = &e.write;
    else if (key == "read_errs") dst = &e.read;
    else if (key == "flush_errs") dst = &e.flush;
    else if (key == "corruption_errs") dst = &e.corruption;
    else if (key == "generation_errs") dst = &e.generation;
    if (!dst) continue;
    auto n = parse_u64(ws[1]);
    if (!n) return err("error_stats: '" + std::string(key) + "' is '" + std::string(ws[1]) + "', not a number");
    *dst = *n;
    ++seen;
  }
  if (seen != 5) return err("error_stats: expected 5 counters (write/read/flush/corruption/generation_errs), found " +
                            std::to_string(seen));
  return e;
}

namespace {

bool set_stat(DeviceErrors& e, std::string_view key, std::uint64_t v) {
  if (key == "write_io_errs") e.write = v;
  else if (key == "read_io_errs") e.read = v;
  else if (key == "flush_io_errs") e.flush = v;
  else if (key == "corruption_errs") e.corruption = v;
  else if (key == "generation_errs") e.generation = v;
  else return false;
  return true;
}

}  // namespace

Result<std::vector<DeviceStatsEntry>> parse_device_stats(std::string_view text) {
  // btrfs-progs ends every line with a newline; without it the last counter may be cut ("12" of "1234").
  if (!text.empty() && text.back() != '\n')
    return err("btrfs device stats: output ends inside a line (cut short): '" +
               std::string(trim(lines(text).back())).substr(0, 80) + "'");
  std::vector<DeviceStatsEntry> out;
  std::map<std::string, size_t> index;
  bool tabular = false;
  for (auto raw : lines(text)) {
    auto line = trim(raw);
    if (line.empty()) continue;
    if (line.starts_with("[")) {
      // [/dev/sda3].write_io_errs   0
      auto close = line.find("].");
      auto ws = close == std::string_view::npos ? std::vector<std::string_view>{} : split_ws(line.substr(close + 2));
      if (ws.size() != 2) return err("btrfs device stats: line not understood (cut short?): '" + std::string(line) + "'");
      auto dev = std::string(line.substr(1, close - 1));
      auto n = parse_u64(ws[1]);
      if (!n) return err("btrfs device stats: bad value in '" + std::string(line) + "'");
      auto it = index.find(dev);
      if (it == index.end()) {
        it = index.emplace(dev, out.size()).first;
        out.push_back(DeviceStatsEntry{dev, std::nullopt, {}});
      }
      set_stat(out[it->second].errors, ws[0], *n);
      continue;
    }
    if (line.starts_with("Id ") && line.find("Path") != std::string_view::npos) {
      tabular = true;
      continue;
    }
    if (tabular) {
      //  1 /dev/vdc            0           0            0                 0                 0
      if (line.starts_with("--")) continue;
      auto ws = split_ws(line);
      // The path may hold a blank ("<missing disk>"): it is everything between the id and the 5 counters.
      if (ws.size() < 7) return err("btrfs device stats -T: row not understood (cut short?): '" + std::string(line) + "'");
      auto id = parse_u64(ws[0]);
      const auto c = ws.size() - 5;
      std::array<std::optional<std::uint64_t>, 5> v;
      for (std::size_t i = 0; i < 5; ++i) v[i] = parse_u64(ws[c + i]);
      if (!id || !v[0] || !v[1] || !v[2] || !v[3] || !v[4])
        return err("btrfs device stats -T: bad row '" + std::string(line) + "'");
      auto path = line.substr(ws[1].data() - line.data(), ws[c - 1].data() + ws[c - 1].size() - ws[1].data());
      out.push_back(DeviceStatsEntry{std::string(path), id, DeviceErrors{*v[0], *v[1], *v[2], *v[3], *v[4]}});
    }
  }
  if (out.empty()) {
    auto ls = lines(text);
    return err("btrfs device stats: no device counters in the output" +
               (ls.empty() ? std::string() : " (first line: '" + std::string(trim(ls.front())) + "')"));
  }
  return out;
}

std::vector<std::string> parse_filesystem_show_devices(std::string_view text) {
  std::vector<std::string> out;
  for (auto l : lines(text)) {
    auto f = split_ws(l);
    if (f.empty() || f[0] != "devid") continue;
    for (std::size_t i = 0; i + 1 < f.size(); ++i)
      if (f[i] == "path") out.emplace_back(f[i + 1]);
  }
  return out;
}

}  // namespace fsaudit::btrfs
