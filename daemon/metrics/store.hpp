#pragma once
// The scrape path only copies an immutable snapshot: no I/O, no locks held by probes (design note 4).
// prometheus-cpp's Exposer calls Collect() serially on its HTTP thread, so Collect must be cheap and
// never throw.
#include <prometheus/collectable.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/metrics/batch.hpp"

namespace fsaudit::metrics {

class Store final : public prometheus::Collectable {
 public:
  // Replaces everything previously published under `key` (e.g. "zfs/host", "capacity//srv").
  void publish(const std::string& key, Batch batch);
  void remove(const std::string& key);
  // Drops every key not in `keep` (targets that disappeared).
  void retain(const std::vector<std::string>& keep);
  std::vector<prometheus::MetricFamily> Collect() const override;
  // Prometheus text exposition of the current snapshot (for tests and --once).
  std::string text() const;

 private:
  void rebuild_locked();
  mutable std::mutex mu_;
  std::map<std::string, Batch> by_key_;
  std::shared_ptr<const std::vector<prometheus::MetricFamily>> snapshot_ =
      std::make_shared<const std::vector<prometheus::MetricFamily>>();
};

}  // namespace fsaudit::metrics
