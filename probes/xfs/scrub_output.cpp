#include "probes/xfs/scrub_output.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

namespace fsaudit::xfs {
namespace {

std::optional<std::uint64_t> number_after(std::string_view line, std::string_view key) {
  auto p = line.find(key);
  if (p == std::string_view::npos) return std::nullopt;
  auto rest = trim(line.substr(p + key.size()));
  size_t n = 0;
  while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
  if (n == 0) return std::nullopt;
  return parse_u64(rest.substr(0, n));
}

}  // namespace

std::uint64_t XfsScrubResult::uncorrectable() const {
  std::uint64_t c = corruptions_found.value_or(corruption_lines);
  std::uint64_t u = unfixable_found.value_or(unfixable_lines);
  return c + u;
}
std::uint64_t XfsScrubResult::found() const { return uncorrectable() + repairs_made.value_or(0); }

XfsScrubResult parse_xfs_scrub(std::string_view text) {
  XfsScrubResult r;
  for (auto line : lines(text)) {
    auto l = trim(line);
    if (l.rfind("Corruption:", 0) == 0) r.corruption_lines++;
    else if (l.rfind("Unfixable Error:", 0) == 0) r.unfixable_lines++;
    else if (l.rfind("Error:", 0) == 0) r.error_lines++;
    if (l.find("Optimization is possible") != std::string_view::npos ||
        l.find("Attempting optimization") != std::string_view::npos ||
        l.find("Optimizations of ") != std::string_view::npos)
      r.optimization_lines++;
    if (auto v = number_after(l, "corruptions found:")) r.corruptions_found = *v;
    if (auto v = number_after(l, "unfixable errors found:")) r.unfixable_found = *v;
    if (auto v = number_after(l, "repairs made:")) r.repairs_made = *v;
    if (auto v = number_after(l, "warnings found:")) r.warnings_found = *v;
    if (auto v = number_after(l, "operational errors found:")) r.operational_errors = *v;
    auto df = l.find(" data found;");
    if (df != std::string_view::npos && l.find("realtime") > df) {
      std::string v(trim(l.substr(0, df)));
      std::replace(v.begin(), v.end(), ',', '.');
      if (auto b = parse_human_bytes(v)) r.data_found_bytes = *b;
    }
    std::string low = to_lower(l);
    if (low.find("kernel metadata scrubbing facility is not available") != std::string::npos ||
        (low.find("kernel metadata scrub") != std::string::npos && low.find("not") != std::string::npos) ||
        low.find("online scrub is not supported") != std::string::npos)
      r.kernel_unsupported = true;
  }
  return r;
}

}  // namespace fsaudit::xfs
