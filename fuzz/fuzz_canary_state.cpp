// The canary state files root reads and acts on (recovery restores bytes at the offset a marker
// names; the identity record decides which device is the canary): the in-flight marker and the
// identity record parsers. Beyond "no crash" (and no UBSan float-to-integer cast): what either
// accepts is written back by its own writer to text that parses to the same values, and its
// strings are bounded.
#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_util.hpp"
#include "probes/canary/identity.hpp"
#include "probes/canary/marker.hpp"
#include "probes/canary/state_json.hpp"

namespace {
[[noreturn]] void fail(const char* what, std::string_view text) {
  std::fprintf(stderr, "canary state invariant broken (%s) for: %.*s\n", what, static_cast<int>(text.size()), text.data());
  std::abort();
}

bool same(const fsaudit::canary::Injection& a, const fsaudit::canary::Injection& b) {
  return a.device == b.device && a.offset == b.offset && a.before_hex == b.before_hex && a.after_hex == b.after_hex &&
         a.block_index == b.block_index && a.block_offset == b.block_offset && a.block_size == b.block_size;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit::canary;
  auto text = fsaudit::fuzz::as_text(data, size);
  if (auto m = parse_marker(text)) {
    if (m->phase.empty() || m->pid < 0 || m->boot_id.size() > state_json::kMaxStringBytes) fail("marker fields", text);
    auto again = parse_marker(marker_text(*m));
    if (!again || again->phase != m->phase || again->nonce != m->nonce || again->pid != m->pid ||
        again->counters_before_devices != m->counters_before_devices || again->injection.has_value() != m->injection.has_value() ||
        (m->injection && !same(*again->injection, *m->injection)))
      fail("marker round trip", text);
  }
  if (auto r = parse_record(text, "c")) {
    if (r->name != "c" || r->devices.empty() || r->devices.size() > 64) fail("record fields", text);
    for (const auto& d : r->devices)
      if (d.kind == DeviceKind::unknown || d.resolved.empty()) fail("record device", text);
    auto again = parse_record(record_text(*r), "c");
    if (!again || again->pattern_key != r->pattern_key || again->devices.size() != r->devices.size() ||
        again->signature_id != r->signature_id)
      fail("record round trip", text);
    for (std::size_t i = 0; i < r->devices.size(); ++i) {
      auto after = identity_mismatch(again->devices[i], r->devices[i]), same = identity_mismatch(r->devices[i], r->devices[i]);
      if (after.ok() != same.ok() || after.error() != same.error()) fail("record device round trip", text);
    }
  }
  return 0;
}
