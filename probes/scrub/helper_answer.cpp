#include "probes/scrub/helper_answer.hpp"

#include <climits>
#include <cstdint>
#include <filesystem>
#include <utility>
#include <nlohmann/json.hpp>

#include "daemon/core/strings.hpp"

namespace fsaudit::scrub {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The answer's "kind" names; `failed` is the key's absence.
constexpr std::pair<ErrorKind, const char*> kKindNames[] = {
    {ErrorKind::refused, "refused"}, {ErrorKind::in_use, "in_use"}, {ErrorKind::not_installed, "not_installed"}};

const char* kind_name(ErrorKind k) {
  for (const auto& [kind, name] : kKindNames)
    if (kind == k) return name;
  return nullptr;
}

std::optional<ErrorKind> kind_named(const std::string& n) {
  for (const auto& [kind, name] : kKindNames)
    if (name == n) return kind;
  return std::nullopt;
}

}  // namespace

std::string scrub_helper_request(const std::string& verb, const std::string& target, int job) {
  json j{{"verb", verb}, {"target", target}};
  if (job > 0) j["job"] = std::to_string(job);
  return j.dump();
}

std::optional<Result<ScrubHelperRequest>> parse_scrub_helper_request(std::string_view line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("verb") || !j["verb"].is_string()) return std::nullopt;
  ScrubHelperRequest r;
  r.verb = j["verb"].get<std::string>();
  if (r.verb != "scrub-start" && r.verb != "scrub-pause" && r.verb != "scrub-cancel") return std::nullopt;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "verb" && it.key() != "target" && !(it.key() == "job" && r.verb != "scrub-start"))
      return Result<ScrubHelperRequest>(err("unknown key \"" + it.key() + "\" for " + r.verb +
                                            ": a scrub request names a verb, a target and (pause, cancel) the job, nothing else"));
  if (!j.contains("target") || !j["target"].is_string())
    return Result<ScrubHelperRequest>(err("\"target\" (a string) is required"));
  r.target = j["target"].get<std::string>();
  if (j.contains("job")) {
    const auto digits = j["job"].is_string() ? j["job"].get<std::string>() : std::string();
    auto pid = !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos && digits.size() <= 10
                   ? parse_i64(digits)
                   : std::nullopt;
    if (!pid || *pid <= 0 || *pid > INT32_MAX)
      return Result<ScrubHelperRequest>(err("\"job\" must be a process id (a string of digits)"));
    r.job = static_cast<int>(*pid);
  }
  return Result<ScrubHelperRequest>(std::move(r));
}

std::string scrub_helper_answer(const ScrubHelperAnswer& a) {
  json j{{"ok", a.ok}};
  j[a.ok ? "result" : "refused"] = a.text;
  if (const char* kind = kind_name(a.kind); !a.ok && kind) j["kind"] = kind;
  if (a.ok && a.job_pid > 0) j["job"] = {{"pid", a.job_pid}, {"dir", a.job_dir}};
  if (a.pause_unsupported) j["pause_unsupported"] = *a.pause_unsupported;
  return j.dump() + "\n";
}

Result<ScrubHelperAnswer> parse_scrub_helper_answer(std::string_view line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return err("the answer is not a JSON object");
  ScrubHelperAnswer a;
  if (!j.contains("ok") || !j["ok"].is_boolean()) return err("the answer has no boolean \"ok\"");
  a.ok = j["ok"].get<bool>();
  const char* text_key = a.ok ? "result" : "refused";
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "ok" && it.key() != text_key && it.key() != "pause_unsupported" && !(a.ok && it.key() == "job") &&
        !(!a.ok && it.key() == "kind"))
      return err("unexpected key \"" + it.key() + "\" in the answer");
  if (!j.contains(text_key) || !j[text_key].is_string()) return err(std::string("the answer has no string \"") + text_key + "\"");
  a.text = j[text_key].get<std::string>();
  if (j.contains("kind")) {
    auto kind = j["kind"].is_string() ? kind_named(j["kind"].get<std::string>()) : std::nullopt;
    if (!kind) return err("\"kind\" is not one of refused, in_use, not_installed");
    a.kind = *kind;
  }
  if (j.contains("pause_unsupported")) {
    if (!j["pause_unsupported"].is_boolean()) return err("\"pause_unsupported\" is not a boolean");
    a.pause_unsupported = j["pause_unsupported"].get<bool>();
  }
  if (j.contains("job")) {
    const auto& job = j["job"];
    if (!job.is_object() || job.size() != 2 || !job.contains("pid") || !job.contains("dir"))
      return err("\"job\" must be {\"pid\": N, \"dir\": PATH}");
    if (!job["pid"].is_number_integer() || job["pid"].get<long long>() <= 0 || job["pid"].get<long long>() > INT_MAX)
      return err("the job's pid is not a positive integer");
    if (!job["dir"].is_string()) return err("the job's dir is not a string");
    a.job_pid = static_cast<int>(job["pid"].get<long long>());
    a.job_dir = job["dir"].get<std::string>();
    fs::path dir(a.job_dir);
    bool clean = dir.is_absolute() && a.job_dir.find('\0') == std::string::npos && dir.has_filename();
    for (const auto& part : dir) clean = clean && part != "." && part != "..";
    if (!clean) return err("the job's dir \"" + a.job_dir + "\" is not a plain absolute path");
  }
  return a;
}

}  // namespace fsaudit::scrub
