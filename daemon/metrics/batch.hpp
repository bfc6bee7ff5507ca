#pragma once
// What one probe run publishes: plain samples, built off the scrape path. The sample type is
// fsaudit's own (no client library here): only the store serialises it, and a probe pays for what
// it fills in, not for every field a client library's metric has. Member names follow the usual
// client-model spelling (family.metric[i].gauge.value, .label[j].name) so probe and test code reads
// the same either way.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "daemon/metrics/status_items.hpp"

namespace fsaudit::metrics {

using Labels = std::map<std::string, std::string>;

enum class MetricType { Counter, Gauge, Histogram, Summary, Untyped };

struct Label {
  std::string name;
  std::string value;
};

struct Value {
  double value = 0;
};

struct Bucket {
  std::uint64_t cumulative_count = 0;
  double upper_bound = 0;
};

struct HistogramValue {
  std::vector<Bucket> bucket;  // ascending, the last one +Inf (none for a summary)
  std::uint64_t sample_count = 0;
  double sample_sum = 0;
};

// One series (a histogram's buckets, sum and count are one sample here). Only the member that
// matches the family's type is meaningful.
struct Sample {
  std::vector<Label> label;
  Value counter;
  Value gauge;
  Value untyped;
  HistogramValue histogram;
};

struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::Untyped;
  std::vector<Sample> metric;
};

class Batch {
 public:
  void gauge(const std::string& name, const std::string& help, const Labels& labels, double value);
  // The value is the running total the probe keeps itself (name must end in _total).
  void counter(const std::string& name, const std::string& help, const Labels& labels, double value);
  // A state set: one series per state, 1 for `current` and 0 for the others (label `state`).
  void stateset(const std::string& name, const std::string& help, const Labels& labels,
                const std::vector<std::string>& states, const std::string& current);
  // A state set's compact form: one series, `state` = current, value 1 (queries of the form
  // `{state="degraded"} == 1` read both forms alike). Nothing when `current` is empty.
  void current_state(const std::string& name, const std::string& help, const Labels& labels, const std::string& current);
  // An info metric: value 1, the information in labels (name should end in _info).
  void info(const std::string& name, const std::string& help, const Labels& labels);
  // upper_bounds ascending without +Inf; cumulative_counts has one more entry (the +Inf bucket == count).
  void histogram(const std::string& name, const std::string& help, const Labels& labels,
                 const std::vector<double>& upper_bounds, const std::vector<std::uint64_t>& cumulative_counts,
                 double sum);
  // A summary without quantiles: only _sum and _count, two series where a histogram needs a third
  // for its +Inf bucket (a histogram with no other bucket says nothing more; issue 33's budget).
  void summary(const std::string& name, const std::string& help, const Labels& labels, std::uint64_t count,
               double sum);

  void append(const Batch& other);
  // What the run tells the status page, beside the samples (daemon/metrics/status_items.hpp).
  StatusItems status;
  // A part of the batch named `id` whose samples `build` adds when asked, `version` telling whether
  // they changed (one device stack's series: most of them are the same from one run to the next).
  // The store keeps each part's text by id and calls `build` only for a version it has not
  // serialised yet, so an unchanged part costs neither building nor serialising, and no sample of
  // it is kept in memory, only its text. `build` may run later, on another thread, or not at all.
  // `build` may also fill its batch's status items (a stack's fsync figures for the status page):
  // the store keeps them with the part's text, and drops them with it.
  struct Part {
    std::string id;
    std::uint64_t version = 0;
    std::function<void(Batch&)> build;
  };
  void include(Part part);
  // True: the parts this batch includes are only those that changed since the key's last publish, and
  // the store keeps every other part the key published as it was. False (a whole batch): the parts it
  // includes replace all of the key's, and those it leaves out are dropped. A probe with thousands of
  // parts of which a few change at a time (the latency sampler's stacks) then pays for those few, not
  // for a pass that names every part and a vector of them to destroy.
  bool parts_delta = false;
  const std::vector<Part>& parts() const { return parts_; }
  // This batch's own samples, without its parts.
  const std::vector<MetricFamily>& own_families() const { return families_; }
  // Own samples and the parts', merged by family name (built on first use when there are parts;
  // not for concurrent first use from several threads).
  const std::vector<MetricFamily>& families() const;
  bool empty() const;
  // Test helper: the value of the first series of `name` whose labels include `match`; NaN if none.
  double value(const std::string& name, const Labels& match = {}) const;
  bool has(const std::string& name, const Labels& match = {}) const;

 private:
  MetricFamily& family(const std::string& name, const std::string& help, MetricType type);
  std::vector<MetricFamily> families_;
  std::vector<Part> parts_;
  mutable std::vector<MetricFamily> merged_;
  mutable bool merged_ok_ = false;
};

}  // namespace fsaudit::metrics
