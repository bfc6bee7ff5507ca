// Conformance suite: the parsers against an external corpus of real tool outputs (FSAUDIT_CORPUS_DIR,
// e.g. ../shared/fixtures). tests/conformance/manifest.json lists, per corpus file, the parser that
// reads it and the values a person reads off the text; each entry is one test.
//
// A value in the manifest is compared with the fact of the same key that the parser's result yields
// (see facts_for): a number within 1e-9 (relative), a string or bool exactly; null means "absent".
// Setting FSAUDIT_CONFORMANCE_DUMP=<file> writes every fact of every entry to <file> (JSON), which
// helps to write a new entry; the expected values themselves are read off the corpus text.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "probes/bcachefs/probe.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/btrfs/scrub_status.hpp"
#include "probes/disk/smart.hpp"
#include "probes/kernel_log/classify.hpp"
#include "probes/xfs/scrub_output.hpp"
#include "probes/xfs/probe.hpp"
#include "probes/zfs/probe.hpp"
#include "probes/zfs/scan.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::conformance {
namespace {

using json = nlohmann::ordered_json;
using Facts = std::map<std::string, json>;

// Resolved by CMake (a relative FSAUDIT_CORPUS_DIR is taken from the source directory).
std::string corpus_dir() { return FSAUDIT_CORPUS_DIR; }

std::string read_corpus(const std::string& name) {
  std::ifstream in(corpus_dir() + "/" + name, std::ios::binary);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str(), out, line;
  std::istringstream lines(all);
  bool any = false;
  while (std::getline(lines, line)) {
    if (line.rfind("# source:", 0) == 0) continue;
    out += line;
    out += '\n';
    any = true;
  }
  if (any && !all.empty() && all.back() != '\n') out.pop_back();
  return out;
}

template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

void zfs_scan_facts(Facts& f, const std::string& p, const zfs::ZfsScan& s) {
  f[p + "recognized"] = s.recognized;
  f[p + "function"] = std::string(zfs::to_string(s.function));
  f[p + "state"] = std::string(zfs::to_string(s.state));
  f[p + "start_time"] = opt(s.start_time);
  f[p + "end_time"] = opt(s.end_time);
  f[p + "duration_seconds"] = opt(s.duration_seconds);
  f[p + "examined_bytes"] = opt(s.examined_bytes);
  f[p + "issued_bytes"] = opt(s.issued_bytes);
  f[p + "total_bytes"] = opt(s.total_bytes);
  f[p + "scan_rate"] = opt(s.scan_rate_bytes_per_second);
  f[p + "issue_rate"] = opt(s.issue_rate_bytes_per_second);
  f[p + "eta_seconds"] = opt(s.eta_seconds);
  f[p + "progress_ratio"] = opt(s.progress_ratio);
  f[p + "repaired_bytes"] = opt(s.repaired_bytes);
  f[p + "errors"] = opt(s.errors);
}

void zfs_status_facts(Facts& f, const zfs::ZfsStatusReport& r) {
  f["pools"] = r.pools.size();
  f["no_pools"] = r.no_pools;
  for (std::size_t i = 0; i < r.pools.size(); ++i) {
    const auto& p = r.pools[i];
    const std::string k = "pool[" + std::to_string(i) + "].";
    f[k + "name"] = p.name;
    f[k + "state"] = p.state;
    f[k + "root_state"] = p.root_state;
    f[k + "see"] = p.see;
    f[k + "has_scan"] = p.has_scan;
    f[k + "checksum_errors"] = opt(p.checksum_errors);
    f[k + "data_errors"] = opt(p.data_errors);
    f[k + "vdevs"] = p.vdevs.size();
    f[k + "redundant"] = zfs::pool_is_redundant(p);
    zfs_scan_facts(f, k + "scan.", p.scan);
    for (const auto& v : p.vdevs) {
      const std::string vk = k + "vdev[" + v.name + "].";
      f[vk + "state"] = v.state;
      f[vk + "role"] = v.role;
      f[vk + "type"] = v.type;
      f[vk + "parent"] = v.parent;
      f[vk + "depth"] = v.depth;
      f[vk + "leaf"] = v.leaf;
      f[vk + "read_errors"] = opt(v.read_errors);
      f[vk + "write_errors"] = opt(v.write_errors);
      f[vk + "checksum_errors"] = opt(v.checksum_errors);
      f[vk + "note"] = v.note;
    }
  }
}

void zfs_rows_facts(Facts& f, const std::vector<zfs::ZfsPoolList>& rows) {
  f["rows"] = rows.size();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& z = rows[i];
    const std::string k = "row[" + std::to_string(i) + "].";
    f[k + "name"] = z.name;
    f[k + "health"] = z.health;
    f[k + "size_bytes"] = opt(z.size_bytes);
    f[k + "allocated_bytes"] = opt(z.allocated_bytes);
    f[k + "free_bytes"] = opt(z.free_bytes);
    f[k + "fragmentation_ratio"] = opt(z.fragmentation_ratio);
    f[k + "capacity_ratio"] = opt(z.capacity_ratio);
    f[k + "dedup_ratio"] = opt(z.dedup_ratio);
  }
}

void scrub_section_facts(Facts& f, const std::string& k, const btrfs::ScrubSection& s) {
  f[k + "device"] = s.device;
  f[k + "devid"] = opt(s.devid);
  f[k + "state"] = std::string(btrfs::to_string(s.state));
  f[k + "started_epoch_utc"] = opt(s.started_epoch);
  f[k + "duration_seconds"] = opt(s.duration_seconds);
  f[k + "time_left_seconds"] = opt(s.time_left_seconds);
  f[k + "total_bytes"] = opt(s.total_bytes);
  f[k + "scrubbed_bytes"] = opt(s.scrubbed_bytes);
  f[k + "progress_ratio"] = opt(s.progress_ratio);
  f[k + "rate"] = opt(s.rate_bytes_per_second);
  f[k + "errors_found"] = opt(s.errors_found());
  f[k + "csum_errors"] = opt(s.csum_errors());
  f[k + "read_errors"] = opt(s.read_errors());
  f[k + "corrected_errors"] = opt(s.corrected_errors());
  f[k + "uncorrectable_errors"] = opt(s.uncorrectable_errors());
  if (s.raw) {
    f[k + "raw.data_bytes_scrubbed"] = s.raw->data_bytes_scrubbed;
    f[k + "raw.tree_bytes_scrubbed"] = s.raw->tree_bytes_scrubbed;
    f[k + "raw.no_csum"] = s.raw->no_csum;
    f[k + "raw.last_physical"] = s.raw->last_physical;
  }
}

// Facts of one corpus text read by `parser`; "parse_ok" / "parse_error" for every parser.
Facts facts_for(const std::string& parser, const std::string& text, const json& args) {
  Facts f;
  auto fail = [&](const std::string& e) {
    f["parse_ok"] = false;
    f["parse_error"] = e;
    return f;
  };
  f["parse_ok"] = true;
  if (parser == "zpool_status" || parser == "zpool_status_json") {
    auto r = parser == "zpool_status" ? zfs::parse_zpool_status(text, zfs::ScanTimeZone::utc)
                                      : zfs::parse_zpool_status_json(text, zfs::ScanTimeZone::utc);
    if (!r.ok()) return fail(r.error());
    zfs_status_facts(f, *r);
  } else if (parser == "zfs_scan_block") {
    // An excerpt that holds only the scan: block (e.g. from a man page): the lines from "scan:".
    std::istringstream in(text);
    std::string line, block;
    bool on = false;
    while (std::getline(in, line)) {
      auto t = line.substr(std::min(line.find_first_not_of(" \t"), line.size()));
      if (t.starts_with("scan:") || t.starts_with("scrub:")) on = true;
      else if (on && (t.starts_with("config:") || t.starts_with("..."))) break;
      if (on) block += line + "\n";
    }
    zfs_scan_facts(f, "scan.", zfs::parse_zfs_scan(block, zfs::ScanTimeZone::utc));
  } else if (parser == "zpool_list") {
    auto r = zfs::parse_zpool_list(text, args.value("columns", std::string()));
    if (!r.ok()) return fail(r.error());
    zfs_rows_facts(f, *r);
  } else if (parser == "zpool_get" || parser == "zpool_get_json") {
    auto r = parser == "zpool_get" ? zfs::parse_zpool_get(text) : zfs::parse_zpool_get_json(text);
    if (!r.ok()) return fail(r.error());
    zfs_rows_facts(f, *r);
  } else if (parser == "btrfs_device_stats") {
    auto r = btrfs::parse_device_stats(text);
    if (!r.ok()) return fail(r.error());
    f["devices"] = r->size();
    for (std::size_t i = 0; i < r->size(); ++i) {
      const auto& d = (*r)[i];
      const std::string k = "dev[" + std::to_string(i) + "].";
      f[k + "device"] = d.device;
      f[k + "devid"] = opt(d.devid);
      f[k + "write"] = d.errors.write;
      f[k + "read"] = d.errors.read;
      f[k + "flush"] = d.errors.flush;
      f[k + "corruption"] = d.errors.corruption;
      f[k + "generation"] = d.errors.generation;
    }
  } else if (parser == "btrfs_scrub_status") {
    auto r = btrfs::parse_scrub_status(text);
    if (!r.ok()) return fail(r.error());
    f["uuid"] = r->uuid;
    f["total_aggregated"] = r->total_aggregated;
    f["uncorrectable_reported"] = r->uncorrectable_reported();
    f["error_lines"] = r->error_lines.size();
    f["devices"] = r->devices.size();
    scrub_section_facts(f, "total.", r->total);
    for (std::size_t i = 0; i < r->devices.size(); ++i)
      scrub_section_facts(f, "dev[" + std::to_string(i) + "].", r->devices[i]);
  } else if (parser == "btrfs_scrub_status_file") {
    auto r = btrfs::parse_scrub_status_file(text);
    if (!r.ok()) return fail(r.error());
    f["version"] = r->version;
    f["records"] = r->records.size();
    for (std::size_t i = 0; i < r->records.size(); ++i) {
      const auto& c = r->records[i];
      const std::string k = "rec[" + std::to_string(i) + "].";
      f[k + "fsid"] = c.fsid;
      f[k + "devid"] = c.devid;
      f[k + "t_start"] = c.t_start;
      f[k + "duration_seconds"] = c.duration_seconds;
      f[k + "canceled"] = c.canceled;
      f[k + "finished"] = c.finished;
      f[k + "state"] = std::string(btrfs::to_string(c.state()));
      f[k + "data_bytes_scrubbed"] = c.counters.data_bytes_scrubbed;
      f[k + "no_csum"] = c.counters.no_csum;
      f[k + "last_physical"] = c.counters.last_physical;
    }
  } else if (parser == "xfs_scrub") {
    auto r = xfs::parse_xfs_scrub(text);
    f["corruption_lines"] = r.corruption_lines;
    f["unfixable_lines"] = r.unfixable_lines;
    f["optimization_lines"] = r.optimization_lines;
    f["corruptions_found"] = opt(r.corruptions_found);
    f["unfixable_found"] = opt(r.unfixable_found);
    f["data_found_bytes"] = opt(r.data_found_bytes);
    f["kernel_unsupported"] = r.kernel_unsupported;
    f["uncorrectable"] = r.uncorrectable();
    f["found"] = r.found();
  } else if (parser == "xfs_spaceman_health") {
    auto r = xfs::parse_spaceman_health(text);
    if (!r.ok()) return fail(r.error());
    f["collected"] = r->collected;
    f["unhealthy"] = r->unhealthy();
  } else if (parser == "bcachefs_io_errors") {
    auto r = bcachefs::parse_io_errors(text);
    if (!r.ok()) return fail(r.error());
    for (const auto& [k, v] : r->since_creation) f["since_creation." + k] = v;
    for (const auto& [k, v] : r->since_reset) f["since_reset." + k] = v;
    f["reset_age"] = r->reset_age;
  } else if (parser == "bcachefs_counter") {
    auto r = bcachefs::parse_counter(text);
    if (!r.ok()) return fail(r.error());
    f["since_mount"] = r->since_mount;
    f["since_creation"] = r->since_creation;
  } else if (parser == "kernel_log") {
    std::istringstream in(text);
    std::string line;
    std::size_t n = 0;
    while (std::getline(in, line)) {
      auto e = kernel_log::classify(kernel_log::strip_log_prefix(line));
      if (!e) continue;
      f["event[" + std::to_string(n++) + "]"] = std::string(e->kind) + " " + e->fs + " " + e->device + " " + e->fs_device;
    }
    f["events"] = n;
  } else if (parser == "smartctl_json") {
    auto r = disk::parse_smartctl_json(text);
    if (!r.ok()) return fail(r.error());
    static const char* const kStates[] = {"ok", "standby", "unsupported", "failed"};
    f["state"] = kStates[static_cast<int>(r->state)];
    f["exit_status"] = r->exit_status;
    auto opt = [&](const char* k, const auto& v) { f[k] = v ? json(*v) : json(nullptr); };
    opt("passed", r->passed);
    f["protocol"] = r->protocol.empty() ? json(nullptr) : json(r->protocol);
    opt("reallocated_sectors", r->reallocated_sectors);
    opt("pending_sectors", r->pending_sectors);
    opt("offline_uncorrectable", r->offline_uncorrectable);
    opt("udma_crc_errors", r->udma_crc_errors);
    opt("critical_warning", r->critical_warning);
    opt("media_errors", r->media_errors);
    opt("available_spare", r->available_spare);
    opt("available_spare_threshold", r->available_spare_threshold);
    opt("percentage_used", r->percentage_used);
    opt("grown_defects", r->grown_defects);
    opt("uncorrected_read", r->uncorrected_read);
    opt("uncorrected_write", r->uncorrected_write);
    opt("temperature_celsius", r->temperature_celsius);
    opt("power_on_hours", r->power_on_hours);
  } else {
    return fail("unknown parser in manifest: " + parser);
  }
  return f;
}

struct Entry {
  std::string file, parser;
  json args, expect;
};

std::vector<Entry> load_manifest() {
  std::ifstream in(FSAUDIT_CONFORMANCE_MANIFEST);
  json doc = json::parse(in, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  std::vector<Entry> out;
  if (!doc.is_object() || !doc.contains("files")) return out;
  for (const auto& e : doc["files"])
    out.push_back({e.at("file").get<std::string>(), e.at("parser").get<std::string>(),
                   e.value("args", json::object()), e.at("expect")});
  return out;
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = load_manifest();
  return all;
}

bool same(const json& want, const json& got) {
  if (want.is_null()) return got.is_null();
  if (want.is_number()) {
    if (!got.is_number()) return false;
    double a = want.get<double>(), b = got.get<double>();
    return a == b || std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
  }
  return want == got;
}

class Corpus : public ::testing::TestWithParam<std::size_t> {
 protected:
  static void SetUpTestSuite() {
    setenv("TZ", "UTC", 1);  // btrfs-progs prints local time
    tzset();
  }
};

TEST(CorpusManifest, LoadsAndEveryFileExists) {
  ASSERT_FALSE(entries().empty()) << "no entries in " << FSAUDIT_CONFORMANCE_MANIFEST;
  json dump = json::object();
  for (const auto& e : entries()) {
    std::ifstream in(corpus_dir() + "/" + e.file);
    EXPECT_TRUE(in.good()) << "corpus file missing: " << corpus_dir() << "/" << e.file;
    EXPECT_FALSE(e.expect.empty()) << e.file << ": no expected values";
    if (std::getenv("FSAUDIT_CONFORMANCE_DUMP")) {
      setenv("TZ", "UTC", 1);
      tzset();
      json f = json::object();
      for (const auto& [k, v] : facts_for(e.parser, read_corpus(e.file), e.args)) f[k] = v;
      dump[e.file] = f;
    }
  }
  if (const char* out = std::getenv("FSAUDIT_CONFORMANCE_DUMP")) std::ofstream(out) << dump.dump(1) << "\n";
}

TEST_P(Corpus, ParserReadsWhatAPersonReads) {
  const auto& e = entries().at(GetParam());
  SCOPED_TRACE(e.file);
  auto text = read_corpus(e.file);
  ASSERT_FALSE(text.empty()) << "cannot read " << corpus_dir() << "/" << e.file;
  auto facts = facts_for(e.parser, text, e.args);
  for (const auto& [key, want] : e.expect.items()) {
    auto it = facts.find(key);
    json got = it == facts.end() ? json(nullptr) : it->second;
    EXPECT_TRUE(same(want, got)) << e.file << " [" << e.parser << "] " << key << ": expected " << want.dump()
                                 << ", parser gives " << got.dump();
  }
}

std::string test_name(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string n = entries().at(info.param).file;
  for (auto& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n + "_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(Manifest, Corpus, ::testing::Range<std::size_t>(0, entries().size()), test_name);

}  // namespace
}  // namespace fsaudit::conformance
