#pragma once
// What /metrics serves. Probes publish one batch per key (a probe on a target); the batch is
// serialised once, at publish time, into text per metric family, so publishing costs what that batch
// costs and nothing that depends on what the store already holds. A scrape gets those pieces
// themselves, in exposition order (a list of shared pointers, made once per change): nothing is
// serialised or copied into one text on the scrape path, and there is no I/O there (design note 4).
// At 1,000 targets the text is 3 MB, most of it unchanged between scrapes: joining it on each scrape
// was most of a scrape's cost, and a second copy of it in memory.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/core/text_pieces.hpp"
#include "daemon/metrics/batch.hpp"

namespace fsaudit::metrics {

class Store {
 public:
  // Replaces everything previously published under `key` (e.g. "zfs\x1fhost", "capacity\x1f/srv").
  void publish(const std::string& key, const Batch& batch);
  void remove(const std::string& key);
  // Drops every key not in `keep` (targets that disappeared).
  void retain(const std::vector<std::string>& keep);
  // Prometheus text exposition of the current state, as the store's pieces. Built at most once per
  // change; the pointer and the pieces stay valid (and unchanged) however the store changes afterwards.
  std::shared_ptr<const TextPieces> exposition() const;
  // The same, joined into one string (status page, D-Bus, --once, tests).
  std::string text() const { return exposition()->join(); }
  // The status items each key last published (a copy, by key): what the status page is built from.
  std::map<std::string, StatusItems> status() const;
  // Calls `fn` with the status items under the store's lock, without copying them (a once-a-minute
  // reader of 10,000 targets); `fn` must not call back into the store.
  void visit_status(const std::function<void(const std::map<std::string, StatusItems>&)>& fn) const;
  // How many times the exposition was (re)built: a test hook for "once per change".
  std::uint64_t builds() const;

 private:
  // One family's HELP/TYPE and sample lines from one batch or part; the lines are shared with the
  // exposition's pieces, so a part's text is held once however many publishes reuse it.
  struct Piece {
    std::string name, head, type;
    std::shared_ptr<const std::string> lines;
    // A batch's own families are rendered without their HELP/TYPE head: the store needs it only
    // for a family it does not hold yet, and takes it from here then (valid during the publish).
    const MetricFamily* source = nullptr;
  };
  struct Family {
    std::shared_ptr<const std::string> head;  // "# HELP ...\n# TYPE ...\n"
    std::string type;  // for type clashes between keys
    // key -> its sample lines. The key is a view of key_families_' own copy (a node key, stable while
    // the key is in the store): one copy of each key, not one per family it publishes.
    std::map<std::string_view, std::vector<std::shared_ptr<const std::string>>> by_key;
  };
  // The text of the parts a key last published, by part id.
  struct PartText {
    std::uint64_t version = 0;
    std::uint64_t seen = 0;  // the publish that last included it
    std::vector<Piece> pieces;
  };
  // Hashed, not ordered: keys and part ids share long prefixes (probe, mount point), which made
  // every comparison of an ordered map's walk a long memcmp at 1,000 targets.
  using PartTexts = std::unordered_map<std::string, PartText>;
  static std::vector<Piece> render(const std::vector<MetricFamily>& families, bool with_heads = true);
  void drop_key_locked(const std::string& key);
  // Removes `key`'s lines from `family`, and the family once no key has lines in it.
  void drop_entry_locked(std::string_view family, std::string_view key);

  mutable std::mutex mu_;
  std::map<std::string, Family, std::less<>> families_;  // by family name: the exposition order
  // key -> the families it published, as views of families_' keys (a family stays while a key lists it)
  std::unordered_map<std::string, std::vector<std::string_view>> key_families_;
  std::unordered_map<std::string, PartTexts> part_texts_;                  // key -> its parts' text
  std::map<std::string, StatusItems> status_;  // key -> its last batch's status items, when any
  std::uint64_t publishes_ = 0;                                   // stamps PartText::seen
  mutable std::shared_ptr<const TextPieces> cache_;             // null after a change
  mutable std::uint64_t builds_ = 0;
};

// The text exposition (format 0.0.4) of one batch on its own: HELP/TYPE and samples per family.
std::string serialize(const Batch& batch);

}  // namespace fsaudit::metrics
