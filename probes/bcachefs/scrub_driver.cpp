#include "probes/bcachefs/scrub_driver.hpp"

#include "probes/bcachefs/scrub_output.hpp"

namespace fsaudit::bcachefs {

using scrub::Observation;
using scrub::Outcome;

namespace {

class BcachefsDriver final : public scrub::JobDriver {
 public:
  Result<void> start(const scrub::ScrubTarget& t, scrub::TargetState& st, scrub::DriverEnv& env) override {
    std::string tool = scrub::find_tool(env.ctx.tool("bcachefs"));
    // `bcachefs scrub` from tools 1.33; `bcachefs data scrub` before.
    std::vector<std::string> argv = {tool, "scrub", t.mountpoint};
    auto v = scrub::run_command(env, {tool, "version"});
    auto ver = v.ok() ? parse_bcachefs_version(v.out) : std::nullopt;
    if (ver && (ver->first < 1 || (ver->first == 1 && ver->second < 33))) argv = {tool, "data", "scrub", t.mountpoint};
    return start_job(t, st, env, argv);
  }

 protected:
  std::string exe() const override { return "bcachefs"; }
  std::string also_arg() const override { return "scrub"; }
  void fill_progress(Observation& o, const std::string& out) override {
    auto p = parse_bcachefs_scrub(out);
    if (!p || p->total_bytes() <= 0) return;
    o.progress = p->checked_bytes() / p->total_bytes();
    o.bytes = p->checked_bytes();
  }
  void fill_result(Observation& o, const scrub::JobStatus& job, scrub::TargetState&, double) override {
    auto p = parse_bcachefs_scrub(job.output);
    if (job.signal != 0) {
      o.last_outcome = Outcome::canceled;
      return;
    }
    // Exit bits: 1 interrupted/error, 2 errors corrected, 4 uncorrected errors. Counts are in
    // sectors of 512 bytes in the table; report sectors as the error count.
    std::uint64_t corrected = p ? static_cast<std::uint64_t>(p->corrected_bytes() / 512) : 0;
    std::uint64_t uncorrected = p ? static_cast<std::uint64_t>(p->uncorrected_bytes() / 512) : 0;
    if ((job.exit_code & 2) && corrected == 0) corrected = 1;
    if ((job.exit_code & 4) && uncorrected == 0) uncorrected = 1;
    o.errors.found = corrected + uncorrected;
    o.errors.repaired = corrected;
    o.errors.uncorrectable = uncorrected;
    if (p) o.bytes = p->checked_bytes();
    o.last_outcome = (job.exit_code & 1) || job.exit_code < 0 || job.exit_code > 7 ? Outcome::failed : Outcome::finished;
  }
};

}  // namespace

std::unique_ptr<scrub::Driver> make_scrub_driver() { return std::make_unique<BcachefsDriver>(); }

}  // namespace fsaudit::bcachefs
