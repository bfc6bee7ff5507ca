#include "probes/xfs/scrub_driver.hpp"

#include <algorithm>

#include "probes/xfs/scrub_output.hpp"

namespace fsaudit::xfs {

using scrub::Observation;
using scrub::Outcome;

namespace {

class XfsDriver final : public scrub::JobDriver {
 public:
  Result<void> start(const scrub::ScrubTarget& t, scrub::TargetState& st, scrub::DriverEnv& env) override {
    // -b: background mode (one thread, lower priority), like xfs_scrub_all.
    return start_job(t, st, env, {scrub::find_tool(env.ctx.tool("xfs_scrub")), "-b", t.mountpoint});
  }

 protected:
  std::string exe() const override { return "xfs_scrub"; }
  void fill_result(Observation& o, const scrub::JobStatus& job, scrub::TargetState& st, double now) override {
    auto r = parse_xfs_scrub(job.output);
    if (r.kernel_unsupported) {
      st.unsupported_reason = "the kernel does not support XFS online scrub";
      st.unsupported_since = now;
      o.last_outcome = Outcome::failed;
      o.detail = st.unsupported_reason;
      return;
    }
    if (job.signal != 0) {
      o.last_outcome = Outcome::canceled;
      o.detail = "xfs_scrub stopped by signal " + std::to_string(job.signal);
      return;
    }
    o.bytes = r.data_found_bytes;
    o.errors.found = r.found();
    o.errors.repaired = r.repairs_made.value_or(0);
    o.errors.uncorrectable = r.uncorrectable();
    if (job.exit_code & 1) o.errors.uncorrectable = std::max<std::uint64_t>(1, *o.errors.uncorrectable);
    if (job.exit_code & 1) o.errors.found = std::max(*o.errors.found, *o.errors.uncorrectable);
    o.last_outcome = (job.exit_code & (4 | 8)) || job.exit_code < 0 ? Outcome::failed : Outcome::finished;
    o.detail = "xfs_scrub exit " + std::to_string(job.exit_code) + ((job.exit_code & 2) ? " (optimisations possible)" : "");
  }
};

}  // namespace

std::unique_ptr<scrub::Driver> make_scrub_driver() { return std::make_unique<XfsDriver>(); }

}  // namespace fsaudit::xfs
