// An HTTP request head as any client on the network sends it -> method, path, Authorization.
// Beyond "no crash": the parts are substrings of the input's first line/headers, the path never
// keeps a query, and nothing parsed carries a CR or LF (they end up in logs and status decisions).
#include <string>

#include "daemon/http/server.hpp"
#include "fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(fsaudit::fuzz::as_text(data, size));
  auto r = fsaudit::http::parse_request_head(in);
  if (!r) return 0;
  for (const std::string* s : {&r->method, &r->path, &r->authorization}) {
    if (s->find('\r') != std::string::npos || s->find('\n') != std::string::npos) __builtin_trap();
    if (!s->empty() && in.find(*s) == std::string::npos) __builtin_trap();
  }
  if (r->path.find('?') != std::string::npos) __builtin_trap();
  return 0;
}
