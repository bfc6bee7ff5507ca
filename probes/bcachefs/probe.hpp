#pragma once
// bcachefs health from <sysfs>/fs/bcachefs/<uuid>/:
//   dev-N/io_errors   "IO errors since filesystem creation" / "IO errors since <t> ago" sections with
//                     read/write/checksum (fs/bcachefs/sb-members.c bch2_dev_io_errors_to_text)
//   dev-N/state_rw    member state, the current one in brackets: "[rw] ro evacuating failed spare"
//   dev-N/label, dev-N/durability, dev-N/block (symlink to the block device)
//   errors            superblock error counters: "<error id> <count> <date time>..." per line
//   counters/<name>   "since mount: N" / "since filesystem creation: N" (sizes may have units: 7.69G)
//   options/data_replicas, options/metadata_replicas
// No bcachefs in this kernel: tested on a fixture tree (tests/fixtures/bcachefs, tests/bcachefs/).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/files.hpp"
#include "daemon/core/host_paths.hpp"
#include "daemon/core/result.hpp"
#include "daemon/metrics/batch.hpp"
#include "daemon/probe/probe.hpp"
#include "probes/bcachefs/parse.hpp"

namespace fsaudit::config {
struct Config;  // the factory reads it; the probe takes plain settings (no yaml-cpp here)
}  // namespace fsaudit::config

namespace fsaudit::bcachefs {

struct Device {
  std::string dir;    // "dev-0"
  std::string name;   // kernel block device name ("sdc"), or dir when there is no block link
  std::string label;  // "hdd.hdd2"
  std::string state;  // rw, ro, evacuating, failed, spare
  std::optional<std::uint64_t> durability;
  std::optional<IoErrors> io_errors;
  std::string problem;
};
struct Filesystem {
  std::string uuid;
  std::vector<Device> devices;
  std::map<std::string, std::uint64_t> sb_errors;
  std::map<std::string, Counter> counters;  // only the error-related ones (see error_counter())
  std::optional<std::uint64_t> data_replicas, metadata_replicas;
  // Files that are there but unreadable or junk (file and errno or text): the probe fails with them,
  // publishing what it could read.
  std::vector<std::string> problems;
};

// Members that hold no readable copy: state "failed", or no block device behind them.
int lost_devices(const Filesystem& f);

// The <uuid> whose member devices include one of the mount source's devices ("/dev/sdb:/dev/sdc").
Result<std::string> find_uuid(const HostPaths& host, const std::string& source);
// Absent files are left unset (older kernels lack some); unreadable or junk ones go to problems
// (per device: Device::problem).
Result<Filesystem> read_filesystem(const HostPaths& host, const std::string& uuid,
                                   const AttributeReader& read = sysfs_reader());

metrics::Batch bcachefs_metrics(const Target& t, const Filesystem& f);

std::unique_ptr<Probe> make_bcachefs_probe(const config::Config& cfg);

}  // namespace fsaudit::bcachefs
