#pragma once
// The in-flight marker (<state_dir>/canary/<name>/inflight.json): what a cycle may have changed on the
// canary, kept from before the first change until the canary is clean again. Recovery (run as root)
// acts on it, so its reader is strict: a field present has the writer's type and range, or the
// marker is unreadable and a person decides.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/core/result.hpp"
#include "probes/canary/injection.hpp"

namespace fsaudit::canary {

struct Marker {
  std::string phase;
  double started = 0;
  std::uint64_t nonce = 0;
  std::uint64_t counters_before = 0;
  std::map<std::string, std::uint64_t> counters_before_devices;
  long pid = 0;
  std::string boot_id;
  std::optional<Injection> injection;
  std::string unreadable;  // why the file could not be read as a marker (phase is then "unreadable"); not written
};

std::string marker_text(const Marker& m);
// `phase` is required and non-empty; the other fields default when absent (markers of older cycles);
// an injection, when there, has every field. The error says which field is wrong.
Result<Marker> parse_marker(std::string_view text);

// An injection's JSON form, shared by the marker and the cycle report.
nlohmann::json injection_json(const Injection& i);
Result<Injection> parse_injection(const nlohmann::json& j);

}  // namespace fsaudit::canary
