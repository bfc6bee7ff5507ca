#include "probes/scrub/helper_route.hpp"

#include <algorithm>
#include <climits>
#include <nlohmann/json.hpp>

#include "daemon/core/helper_client.hpp"

namespace fsaudit::scrub {

namespace fs = std::filesystem;
using nlohmann::json;

HelperTransport socket_transport(const std::string& socket_path) {
  return [socket_path](const std::string& request, std::chrono::milliseconds timeout) {
    return helper_exchange(socket_path, request, timeout);
  };
}

bool actions_via_helper(const std::string& helper_socket, uid_t euid) { return !helper_socket.empty() && euid != 0; }

std::string scrub_helper_request(const std::string& verb, const std::string& target, int job) {
  json j{{"verb", verb}, {"target", target}};
  if (job > 0) j["job"] = std::to_string(job);
  return j.dump();
}

std::string scrub_helper_answer(const ScrubHelperAnswer& a) {
  json j{{"ok", a.ok}};
  j[a.ok ? "result" : "refused"] = a.text;
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
    if (it.key() != "ok" && it.key() != text_key && it.key() != "pause_unsupported" && !(a.ok && it.key() == "job"))
      return err("unexpected key \"" + it.key() + "\" in the answer");
  if (!j.contains(text_key) || !j[text_key].is_string()) return err(std::string("the answer has no string \"") + text_key + "\"");
  a.text = j[text_key].get<std::string>();
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

namespace {

class HelperRoutedDriver final : public Driver {
 public:
  HelperRoutedDriver(std::unique_ptr<Driver> inner, HelperTransport transport)
      : inner_(std::move(inner)), transport_(std::move(transport)) {}
  Result<Observation> observe(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    return inner_->observe(t, st, env);
  }
  bool can_pause(const TargetState& st) const override { return inner_->can_pause(st); }
  Result<void> start(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    return call("scrub-start", t, st, env, true);
  }
  // The helper resumes a scrub it paused when asked to start one.
  Result<void> resume(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    return call("scrub-start", t, st, env, true);
  }
  Result<void> pause(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    return call("scrub-pause", t, st, env, false);
  }
  Result<void> cancel(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    return call("scrub-cancel", t, st, env, false);
  }

 private:
  Result<void> call(const std::string& verb, const ScrubTarget& t, TargetState& st, DriverEnv& env, bool starts) {
    // The helper observes before it acts (up to a minute for a slow tool): never less than 30 s.
    auto timeout = std::clamp<std::chrono::milliseconds>(env.ctx.remaining(), std::chrono::seconds(30), std::chrono::minutes(2));
    auto line = transport_(scrub_helper_request(verb, t.name, starts ? 0 : st.job_pid), timeout);
    if (!line) return err(line.error());
    auto a = parse_scrub_helper_answer(*line);
    if (!a) return err("unreadable answer from the fsaudit helper to " + verb + ": " + a.error());
    if (a->pause_unsupported) st.pause_unsupported = *a->pause_unsupported;
    if (!a->ok) return err("the fsaudit helper refused " + verb + ": " + a->text);
    if (starts && a->job_pid > 0) {
      // The helper's job for this target, nothing else: its directory is named by the target's key.
      if (fs::path(a->job_dir).filename() != t.key())
        return err("the fsaudit helper answered a job directory " + a->job_dir + " that is not " + t.name + "'s");
      st.job_pid = a->job_pid;
      st.job_dir = a->job_dir;
    }
    return {};
  }
  std::unique_ptr<Driver> inner_;
  HelperTransport transport_;
};

}  // namespace

std::unique_ptr<Driver> route_through_helper(std::unique_ptr<Driver> inner, HelperTransport transport) {
  return std::make_unique<HelperRoutedDriver>(std::move(inner), std::move(transport));
}

}  // namespace fsaudit::scrub
