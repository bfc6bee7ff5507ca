#pragma once
// The composition root of fsauditd: the only place that names every probe type and plugs the
// canary's lab mode, identity series and init job into the daemon (daemon/ names no probe).
#include <memory>
#include <vector>

#include "daemon/app/daemon.hpp"
#include "daemon/config/config.hpp"
#include "daemon/probe/probe.hpp"

namespace fsaudit::fsauditd {

// The probes of every row of config::probe_types(); throws std::logic_error when a row has no
// factory here (or a factory no row), so the two cannot drift apart unnoticed.
std::vector<std::unique_ptr<Probe>> make_probes(const config::Config& cfg);

// make_probes plus the canary hooks: what fsauditd hands to app::run().
app::Extensions extensions();

}  // namespace fsaudit::fsauditd
