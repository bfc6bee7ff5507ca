#include "probes/canary/marker.hpp"

#include <climits>
#include <nlohmann/json.hpp>

#include "probes/canary/state_json.hpp"

namespace fsaudit::canary {

using nlohmann::json;
namespace sj = state_json;

json injection_json(const Injection& i) {
  return json{{"device", i.device},         {"offset", i.offset},           {"before", i.before_hex},
              {"after", i.after_hex},       {"block_index", i.block_index}, {"block_offset", i.block_offset},
              {"block_size", i.block_size}};
}

namespace {

// Assigns a required field, or returns its error (prefixed with where it is).
template <class T, class R>
std::string take(R r, T& out, const char* key, bool required) {
  if (!r) return r.error();
  if (!*r) return required ? std::string("\"") + key + "\" is missing" : std::string();
  out = static_cast<T>(**r);
  return "";
}

}  // namespace

Result<Injection> parse_injection(const json& j) {
  if (!j.is_object()) return err("\"injection\" is not an object");
  Injection i;
  for (auto why : {take(sj::string_field(j, "device"), i.device, "device", true),
                   take(sj::u64_field(j, "offset"), i.offset, "offset", true),
                   take(sj::string_field(j, "before"), i.before_hex, "before", true),
                   take(sj::string_field(j, "after"), i.after_hex, "after", true),
                   take(sj::u64_field(j, "block_index"), i.block_index, "block_index", true),
                   take(sj::u64_field(j, "block_offset"), i.block_offset, "block_offset", true),
                   take(sj::u64_field(j, "block_size"), i.block_size, "block_size", true)})
    if (!why.empty()) return err("injection: " + why);
  return i;
}

std::string marker_text(const Marker& m) {
  json j{{"phase", m.phase},
         {"started", m.started},
         {"nonce", m.nonce},
         {"counters_before", m.counters_before},
         {"counters_before_devices", m.counters_before_devices},
         {"pid", m.pid},
         {"boot_id", m.boot_id}};
  if (m.injection) j["injection"] = injection_json(*m.injection);
  return j.dump(2) + "\n";
}

Result<Marker> parse_marker(std::string_view text) {
  auto j = sj::parse_object(text);
  if (!j) return err(j.error());
  Marker m;
  for (auto why : {take(sj::string_field(*j, "phase"), m.phase, "phase", true),
                   take(sj::number_field(*j, "started"), m.started, "started", false),
                   take(sj::u64_field(*j, "nonce"), m.nonce, "nonce", false),
                   take(sj::u64_field(*j, "counters_before"), m.counters_before, "counters_before", false),
                   take(sj::u64_field(*j, "pid", INT_MAX), m.pid, "pid", false),
                   take(sj::string_field(*j, "boot_id"), m.boot_id, "boot_id", false)})
    if (!why.empty()) return err(why);
  if (m.phase.empty()) return err("\"phase\" is empty");
  if (auto it = j->find("counters_before_devices"); it != j->end()) {
    if (!it->is_object()) return err("\"counters_before_devices\" is not an object");
    for (const auto& [dev, n] : it->items()) {
      json one{{"count", n}};
      std::uint64_t v = 0;
      if (auto why = take(sj::u64_field(one, "count"), v, "count", true); !why.empty())
        return err("counters_before_devices[\"" + dev + "\"]: " + why);
      m.counters_before_devices[dev] = v;
    }
  }
  if (auto it = j->find("injection"); it != j->end()) {
    auto i = parse_injection(*it);
    if (!i) return err(i.error());
    m.injection = *i;
  }
  return m;
}

}  // namespace fsaudit::canary
