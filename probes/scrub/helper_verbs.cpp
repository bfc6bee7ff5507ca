#include "probes/scrub/helper_verbs.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "daemon/core/clock.hpp"
#include "probes/scrub/probe.hpp"

namespace fsaudit::scrub {

using nlohmann::json;

namespace {

std::string answer(bool ok, const std::string& text) {
  json j{{"ok", ok}};
  j[ok ? "result" : "refused"] = text;
  return j.dump() + "\n";
}

}  // namespace

const std::vector<std::string>& scrub_helper_verbs() {
  static const std::vector<std::string> v = {"scrub-start", "scrub-pause", "scrub-cancel"};
  return v;
}

std::optional<std::string> handle_scrub_helper_request(std::string_view line, const config::Config& own,
                                                       CommandRunner& runner) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("verb") || !j["verb"].is_string()) return std::nullopt;
  const auto verb = j["verb"].get<std::string>();
  const auto& verbs = scrub_helper_verbs();
  if (std::find(verbs.begin(), verbs.end(), verb) == verbs.end()) return std::nullopt;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "verb" && it.key() != "target")
      return answer(false, "unknown key \"" + it.key() + "\": a scrub request names a verb and a target, nothing else");
  if (!j.contains("target") || !j["target"].is_string()) return answer(false, "\"target\" (a string) is required");
  // Everything below comes from the helper's own config: its targets, tools, host paths and state.
  ScrubProbe probe(own.scrub, own.targets);
  ProbeContext ctx{own.host, runner, SystemClock::instance(), own.tools, own.state_dir, {},
                   std::chrono::steady_clock::now() + std::chrono::seconds(60)};
  auto done = probe.request(verb.substr(6), j["target"].get<std::string>(), ctx);
  if (!done) return answer(false, done.error() + " (helper config " + own.source + ")");
  return answer(true, *done);
}

}  // namespace fsaudit::scrub
