#pragma once
// A job's key, "<probe>\x1f<target>": the scheduler's name for a probe on a target, and the key the
// metrics store keeps what that job publishes under (a part of it adds "\x1e<part id>"). Made and read
// here only.
#include <string>
#include <string_view>

namespace fsaudit {

inline std::string job_key(std::string_view probe, std::string_view target) {
  std::string k;
  k.reserve(probe.size() + 1 + target.size());
  return k.append(probe).append(1, '\x1f').append(target);
}

struct JobKeyParts {
  std::string_view probe, target;  // target empty for a key without one
};

// The probe and the target of `key`; a part key's target stops before its part id.
inline JobKeyParts split_job_key(std::string_view key) {
  auto at = key.find('\x1f');
  if (at == std::string_view::npos) return {key, {}};
  auto target = key.substr(at + 1);
  return {key.substr(0, at), target.substr(0, target.find('\x1e'))};
}

}  // namespace fsaudit
