#include "probes/md/scrub_output.hpp"

#include "daemon/core/strings.hpp"

namespace fsaudit::md {

std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_md_sync_completed(std::string_view text) {
  auto p = split(trim(text), '/');
  if (p.size() != 2) return std::nullopt;
  auto a = parse_u64(trim(p[0])), b = parse_u64(trim(p[1]));
  if (!a || !b) return std::nullopt;
  return std::make_pair(*a, *b);
}

}  // namespace fsaudit::md
