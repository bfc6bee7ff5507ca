#pragma once
// Invariants every fuzz target checks on what a parser produced.
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string_view>

#include "daemon/metrics/batch.hpp"
#include "daemon/metrics/label_value.hpp"

namespace fsaudit::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Every label value that reached a metric family is valid, bounded UTF-8.
inline void check_labels(const metrics::Batch& b) {
  for (const auto& f : b.families())
    for (const auto& m : f.metric)
      for (const auto& l : m.label)
        if (!metrics::is_clean_label_value(l.value)) {
          std::fprintf(stderr, "unclean label %s in %s\n", l.name.c_str(), f.name.c_str());
          std::abort();
        }
}

}  // namespace fsaudit::fuzz
