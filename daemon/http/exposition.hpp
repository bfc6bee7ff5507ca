#pragma once
// A reader for the Prometheus text exposition format, so the status page and the D-Bus API are a
// view over exactly what /metrics shows, with no second path from the probes.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"
#include "daemon/core/text_pieces.hpp"

namespace fsaudit::http {

using LabelSet = std::map<std::string, std::string>;

struct Sample {
  std::string name;
  LabelSet labels;
  double value = 0;
  std::string label(const std::string& key) const {
    auto it = labels.find(key);
    return it == labels.end() ? std::string() : it->second;
  }
};

class Exposition {
 public:
  std::vector<Sample> samples;
  // Samples of `name` whose labels include every pair of `match`.
  std::vector<const Sample*> find(std::string_view name, const LabelSet& match = {}) const;
  std::optional<double> value(std::string_view name, const LabelSet& match = {}) const;
  // For a state set: the `state_label` value of the series that is 1.
  std::optional<std::string> state(std::string_view name, const LabelSet& match,
                                   const std::string& state_label = "state") const;
};

// Errors name the line. Comments (# HELP, # TYPE) are skipped; timestamps are ignored.
// With `only`, samples of other metrics are skipped unread (and unchecked).
Result<Exposition> parse_exposition(std::string_view text, std::string_view only = {});

// The text of one family of an exposition held as the store's pieces (metrics::Store::exposition()):
// its HELP/TYPE head and the pieces after it, up to the next family's head. Only what that family
// needs is copied, not the whole exposition.
std::string family_text(const TextPieces& pieces, std::string_view family);

}  // namespace fsaudit::http
