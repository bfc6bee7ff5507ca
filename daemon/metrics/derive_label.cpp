#include "daemon/metrics/derive_label.hpp"

#include <vector>

namespace fsaudit::metrics {

Batch with_derived_label(const Batch& in, const std::string& from, const std::string& to,
                         const std::function<std::string(const std::string&)>& derive) {
  Batch out;
  for (const auto& f : in.own_families()) {
    for (const auto& m : f.metric) {
      Labels l;
      for (const auto& x : m.label) l[x.name] = x.value;
      if (auto it = l.find(from); it != l.end() && !l.count(to))
        if (auto v = derive(it->second); !v.empty()) l[to] = v;
      switch (f.type) {
        case MetricType::Gauge: out.gauge(f.name, f.help, l, m.gauge.value); break;
        case MetricType::Counter: out.counter(f.name, f.help, l, m.counter.value); break;
        case MetricType::Histogram: {
          std::vector<double> bounds;
          std::vector<std::uint64_t> counts;
          for (std::size_t i = 0; i < m.histogram.bucket.size(); ++i) {
            if (i + 1 < m.histogram.bucket.size()) bounds.push_back(m.histogram.bucket[i].upper_bound);
            counts.push_back(m.histogram.bucket[i].cumulative_count);
          }
          out.histogram(f.name, f.help, l, bounds, counts, m.histogram.sample_sum);
          break;
        }
        case MetricType::Summary: out.summary(f.name, f.help, l, m.histogram.sample_count, m.histogram.sample_sum); break;
        case MetricType::Untyped: break;  // no Batch builder makes one
      }
    }
  }
  for (const auto& p : in.parts()) out.include(p);
  out.parts_delta = in.parts_delta;
  out.status = in.status;  // the labels change, not what the run tells the status page
  return out;
}

}  // namespace fsaudit::metrics
