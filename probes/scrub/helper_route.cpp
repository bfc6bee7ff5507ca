#include "probes/scrub/helper_route.hpp"

#include <algorithm>

#include "daemon/core/helper_client.hpp"

namespace fsaudit::scrub {

namespace fs = std::filesystem;

HelperTransport socket_transport(const std::string& socket_path) {
  return [socket_path](const std::string& request, std::chrono::milliseconds timeout) {
    return helper_exchange(socket_path, request, timeout);
  };
}

bool actions_via_helper(const std::string& helper_socket, uid_t euid) { return !helper_socket.empty() && euid != 0; }

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
    if (!line) return err_in("", line);
    auto a = parse_scrub_helper_answer(*line);
    if (!a) return err("unreadable answer from the fsaudit helper to " + verb + ": " + a.error());
    if (a->pause_unsupported) st.pause_unsupported = *a->pause_unsupported;
    if (!a->ok) return err("the fsaudit helper refused " + verb + ": " + a->text, a->kind);
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
