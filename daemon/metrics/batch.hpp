#pragma once
// What one probe run publishes: plain samples, built off the scrape path.
#include <prometheus/metric_family.h>

#include <map>
#include <string>
#include <vector>

namespace fsaudit::metrics {

using Labels = std::map<std::string, std::string>;

class Batch {
 public:
  void gauge(const std::string& name, const std::string& help, const Labels& labels, double value);
  // The value is the running total the probe keeps itself (name must end in _total).
  void counter(const std::string& name, const std::string& help, const Labels& labels, double value);
  // A state set: one series per state, 1 for `current` and 0 for the others (label `state`).
  void stateset(const std::string& name, const std::string& help, const Labels& labels,
                const std::vector<std::string>& states, const std::string& current);
  // An info metric: value 1, the information in labels (name should end in _info).
  void info(const std::string& name, const std::string& help, const Labels& labels);
  // upper_bounds ascending without +Inf; cumulative_counts has one more entry (the +Inf bucket == count).
  void histogram(const std::string& name, const std::string& help, const Labels& labels,
                 const std::vector<double>& upper_bounds, const std::vector<std::uint64_t>& cumulative_counts,
                 double sum);

  void append(const Batch& other);
  const std::vector<prometheus::MetricFamily>& families() const { return families_; }
  bool empty() const { return families_.empty(); }
  // Test helper: the value of the first series of `name` whose labels include `match`; NaN if none.
  double value(const std::string& name, const Labels& match = {}) const;
  bool has(const std::string& name, const Labels& match = {}) const;

 private:
  prometheus::MetricFamily& family(const std::string& name, const std::string& help, prometheus::MetricType type);
  std::vector<prometheus::MetricFamily> families_;
};

}  // namespace fsaudit::metrics
