#pragma once
// The request head parser, apart from the server: a parser's header reaches nothing but core.
#include <string>
#include <string_view>

#include "daemon/core/result.hpp"

namespace fsaudit::http {

// What the server reads from a request head: the request line's method and path (query cut off)
// and the Authorization header. An error (answered 400) when the request line is not HTTP.
struct RequestHead {
  std::string method, path, authorization;
};
Result<RequestHead> parse_request_head(std::string_view head);

}  // namespace fsaudit::http
