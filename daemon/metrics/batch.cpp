#include "daemon/metrics/batch.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "daemon/metrics/label_value.hpp"

namespace fsaudit::metrics {
namespace {
// The one place where label names and values enter a batch (stateset's `state` included; a
// histogram's `le` is written by the serialiser): cleaning label values belongs here.
std::vector<Label> to_labels(const Labels& labels) {
  std::vector<Label> out;
  out.reserve(labels.size());
  // Every value may come from outside (tool output, device names, failure reasons): cleaned here,
  // where all labels enter a family, so no probe can make the exposition invalid.
  for (const auto& [k, v] : labels) out.push_back({k, clean_label_value(v)});
  return out;
}
bool matches(const Sample& m, const Labels& want) {
  for (const auto& [k, v] : want) {
    bool found = false;
    for (const auto& l : m.label)
      if (l.name == k && (l.value == v || l.value == clean_label_value(v))) found = true;
    if (!found) return false;
  }
  return true;
}
}  // namespace

MetricFamily& Batch::family(const std::string& name, const std::string& help,
                                        MetricType type) {
  merged_ok_ = false;
  for (auto& f : families_)
    if (f.name == name) return f;
  families_.push_back(MetricFamily{name, help, type, {}});
  return families_.back();
}

void Batch::gauge(const std::string& name, const std::string& help, const Labels& labels, double value) {
  Sample m;
  m.label = to_labels(labels);
  m.gauge.value = value;
  family(name, help, MetricType::Gauge).metric.push_back(std::move(m));
}

void Batch::counter(const std::string& name, const std::string& help, const Labels& labels, double value) {
  Sample m;
  m.label = to_labels(labels);
  m.counter.value = value;
  family(name, help, MetricType::Counter).metric.push_back(std::move(m));
}

void Batch::stateset(const std::string& name, const std::string& help, const Labels& labels,
                     const std::vector<std::string>& states, const std::string& current) {
  for (const auto& s : states) {
    Labels l = labels;
    l["state"] = s;
    gauge(name, help, l, s == current ? 1.0 : 0.0);
  }
}

void Batch::current_state(const std::string& name, const std::string& help, const Labels& labels,
                          const std::string& current) {
  if (current.empty()) return;
  Labels l = labels;
  l["state"] = current;
  gauge(name, help, l, 1.0);
}

void Batch::info(const std::string& name, const std::string& help, const Labels& labels) {
  gauge(name, help, labels, 1.0);
}

void Batch::histogram(const std::string& name, const std::string& help, const Labels& labels,
                      const std::vector<double>& upper_bounds,
                      const std::vector<std::uint64_t>& cumulative_counts, double sum) {
  Sample m;
  m.label = to_labels(labels);
  for (size_t i = 0; i < upper_bounds.size(); ++i)
    m.histogram.bucket.push_back({i < cumulative_counts.size() ? cumulative_counts[i] : 0, upper_bounds[i]});
  std::uint64_t count = cumulative_counts.empty() ? 0 : cumulative_counts.back();
  m.histogram.bucket.push_back({count, std::numeric_limits<double>::infinity()});
  m.histogram.sample_count = count;
  m.histogram.sample_sum = sum;
  family(name, help, MetricType::Histogram).metric.push_back(std::move(m));
}

void Batch::summary(const std::string& name, const std::string& help, const Labels& labels, std::uint64_t count,
                    double sum) {
  Sample m;
  m.label = to_labels(labels);
  m.histogram.sample_count = count;
  m.histogram.sample_sum = sum;
  family(name, help, MetricType::Summary).metric.push_back(std::move(m));
}

void Batch::append(const Batch& other) {
  status.append(other.status);
  for (const auto& f : other.families()) {
    auto& mine = family(f.name, f.help, f.type);
    mine.metric.insert(mine.metric.end(), f.metric.begin(), f.metric.end());
  }
}

void Batch::include(Part part) {
  if (!part.build) return;
  parts_.push_back(std::move(part));
  merged_ok_ = false;
}

const std::vector<MetricFamily>& Batch::families() const {
  if (parts_.empty()) return families_;
  if (!merged_ok_) {
    merged_ = families_;
    for (const auto& part : parts_) {
      Batch built;
      part.build(built);
      for (const auto& f : built.families()) {
        auto it = std::find_if(merged_.begin(), merged_.end(), [&](const MetricFamily& m) { return m.name == f.name; });
        if (it == merged_.end()) merged_.push_back(f);
        else it->metric.insert(it->metric.end(), f.metric.begin(), f.metric.end());
      }
    }
    merged_ok_ = true;
  }
  return merged_;
}

bool Batch::empty() const { return families().empty(); }

double Batch::value(const std::string& name, const Labels& match) const {
  for (const auto& f : families()) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      if (!matches(m, match)) continue;
      switch (f.type) {
        case MetricType::Counter: return m.counter.value;
        case MetricType::Gauge: return m.gauge.value;
        case MetricType::Histogram:
        case MetricType::Summary: return static_cast<double>(m.histogram.sample_count);
        default: return m.untyped.value;
      }
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

bool Batch::has(const std::string& name, const Labels& match) const {
  return !std::isnan(value(name, match));
}

}  // namespace fsaudit::metrics
