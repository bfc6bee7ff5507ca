#include "probes/kernel_log/kmsg_record.hpp"

#include "daemon/core/strings.hpp"

namespace fsaudit::kernel_log {

namespace {
int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::optional<KmsgRecord> parse_kmsg_record(std::string_view rec) {
  auto semi = rec.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  auto fields = split(rec.substr(0, semi), ',');
  if (fields.size() < 4) return std::nullopt;
  auto prio = parse_u64(fields[0]);
  auto seq = parse_u64(fields[1]);
  auto ts = parse_u64(fields[2]);
  if (!prio || !seq || !ts || fields[3].empty()) return std::nullopt;
  KmsgRecord r;
  r.level = static_cast<int>(*prio & 7);
  r.facility = static_cast<int>(*prio >> 3);
  r.seq = *seq;
  r.ts_usec = *ts;
  r.flags = fields[3][0];
  std::string_view msg = rec.substr(semi + 1);
  auto nl = msg.find('\n');  // dictionary lines (" SUBSYSTEM=...") follow the first newline
  if (nl != std::string_view::npos) msg = msg.substr(0, nl);
  r.message.reserve(msg.size());
  for (std::size_t i = 0; i < msg.size(); ++i) {
    if (msg[i] == '\\' && i + 3 < msg.size() && msg[i + 1] == 'x' && hexval(msg[i + 2]) >= 0 &&
        hexval(msg[i + 3]) >= 0) {
      r.message.push_back(static_cast<char>(hexval(msg[i + 2]) * 16 + hexval(msg[i + 3])));
      i += 3;
    } else {
      r.message.push_back(msg[i]);
    }
  }
  return r;
}

}  // namespace fsaudit::kernel_log
