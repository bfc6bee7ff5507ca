#include "daemon/metrics/store.hpp"

#include <prometheus/text_serializer.h>

#include <algorithm>

namespace fsaudit::metrics {

void Store::publish(const std::string& key, Batch batch) {
  std::lock_guard l(mu_);
  by_key_[key] = std::move(batch);
  rebuild_locked();
}

void Store::remove(const std::string& key) {
  std::lock_guard l(mu_);
  if (by_key_.erase(key)) rebuild_locked();
}

void Store::retain(const std::vector<std::string>& keep) {
  std::lock_guard l(mu_);
  bool changed = false;
  for (auto it = by_key_.begin(); it != by_key_.end();) {
    if (std::find(keep.begin(), keep.end(), it->first) == keep.end()) {
      it = by_key_.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  if (changed) rebuild_locked();
}

// Families of one name from several probes/targets are merged into one, as the exposition format
// allows only one HELP/TYPE per name.
void Store::rebuild_locked() {
  std::map<std::string, prometheus::MetricFamily> merged;
  for (const auto& [key, batch] : by_key_) {
    for (const auto& f : batch.families()) {
      auto [it, inserted] = merged.try_emplace(f.name, prometheus::MetricFamily{f.name, f.help, f.type, {}});
      if (it->second.type != f.type) continue;  // a type clash is a bug; keep the first, drop the rest
      it->second.metric.insert(it->second.metric.end(), f.metric.begin(), f.metric.end());
    }
  }
  auto out = std::make_shared<std::vector<prometheus::MetricFamily>>();
  out->reserve(merged.size());
  for (auto& [name, f] : merged) out->push_back(std::move(f));
  snapshot_ = std::move(out);
}

std::vector<prometheus::MetricFamily> Store::Collect() const {
  std::shared_ptr<const std::vector<prometheus::MetricFamily>> snap;
  {
    std::lock_guard l(mu_);
    snap = snapshot_;
  }
  return *snap;
}

std::string Store::text() const {
  prometheus::TextSerializer s;
  return s.Serialize(Collect());
}

}  // namespace fsaudit::metrics
