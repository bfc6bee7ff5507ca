#pragma once
// Serves GET /metrics straight from the store's cached exposition, ahead of prometheus-cpp's own
// handler (which would call Collect() and serialise every family again on every scrape).
#include <CivetServer.h>

#include <memory>

#include "daemon/metrics/store.hpp"

namespace fsaudit::app {

// Callbacks for prometheus::Exposer's constructor; the store must outlive the exposer.
const CivetCallbacks* scrape_callbacks(std::shared_ptr<const metrics::Store> store);

}  // namespace fsaudit::app
