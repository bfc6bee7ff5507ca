#include "daemon/core/dates.hpp"

#include <ctime>
#include <string>

#include "daemon/core/strings.hpp"

namespace fsaudit {

std::optional<std::int64_t> parse_c_date(std::string_view text, bool utc) {
  std::string c;
  for (auto w : split_ws(text)) c += (c.empty() ? "" : " ") + std::string(w);
  if (c.empty()) return std::nullopt;
  std::tm tm{};
  const char* end = ::strptime(c.c_str(), "%a %b %d %H:%M:%S %Y", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  std::time_t t;
  if (utc) {
    t = ::timegm(&tm);
  } else {
    tm.tm_isdst = -1;
    t = ::mktime(&tm);
  }
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<std::int64_t>(t);
}

}  // namespace fsaudit
