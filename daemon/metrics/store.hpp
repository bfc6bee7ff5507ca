#pragma once
// What /metrics serves. Probes publish one batch per key (a probe on a target); the batch is
// serialised once, at publish time, into one text cut into a piece per metric family, so publishing
// costs what that batch costs and nothing that depends on what the store already holds. The text is
// kept packed (line_pack.hpp: less than half its size). A scrape gets those pieces themselves, in
// exposition order (views into the batches' blobs, made once per change), and writes each out in full
// as it sends it: nothing is serialised or joined into one text on the scrape path, and there is no
// I/O there (design note 4).
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
#include <unordered_set>
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
  // Calls `fn` with each key's status items in turn, unpacked one at a time (a once-a-minute reader of
  // 10,000 targets holds one key's items, not a copy of all); under the store's lock, so `fn` must not
  // call back into the store.
  void visit_status(const std::function<void(const std::string& key, const StatusItems& items)>& fn) const;
  // How many times the exposition was (re)built: a test hook for "once per change".
  std::uint64_t builds() const;

 private:
  // A family's name, type and HELP/TYPE text, made once per family name and shared by every key and
  // part that publishes it (10,000 parts of one family hold one head, not 10,000 copies of it).
  struct Head {
    std::string name, type, text;
    std::uint32_t id;  // its place in names_: how a packed piece names its family
  };
  using HeadPtr = std::shared_ptr<const Head>;
  struct Family;
  // What one render() made: all the lines of one batch (or one part), packed, however many families
  // and series it has, and where each family's packed piece is in them.
  struct Rendered {
    std::string blob;
    struct Lines {
      HeadPtr head;
      std::uint32_t off = 0, len = 0;
    };
    std::vector<Lines> lines;  // in the batch's family order; a family may come more than once
  };
  // Everything the store holds of one key (or part key), in one allocation, as its last publish made
  // it: the key, its status items (packed: status_pack.hpp), which family's lines are where, and the
  // lines (packed: line_pack.hpp). A map node with the key, a vector of slices, a status string and a
  // blob, each allocated on its own, cost more than the lines themselves (issue 33: about 300 bytes a
  // key, three keys a filesystem). Immutable: a publish makes a new one, and an exposition built before
  // shows the old one until it is let go of (Grave).
  using Record = std::shared_ptr<const char[]>;
  struct RecordView;
  // A key in the store: its record. Hashed by the record's key, not ordered: keys and part ids share
  // long prefixes (probe, mount point), which made every comparison of an ordered map's walk a long
  // memcmp at 1,000 targets. Elements stay put (the families point at them) until the key is erased;
  // a publish replaces the record in place, with the same key.
  struct Entry {
    mutable Record record;
    std::string_view key() const;
  };
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view k) const { return std::hash<std::string_view>()(k); }
    std::size_t operator()(const Entry& e) const { return (*this)(e.key()); }
  };
  struct KeyEq {
    using is_transparent = void;
    static std::string_view of(std::string_view k) { return k; }
    static std::string_view of(const Entry& e) { return e.key(); }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const { return of(a) == of(b); }
  };
  using Keys = std::unordered_set<Entry, KeyHash, KeyEq>;
  // A family: its head, and the keys that publish lines in it, sorted by key (the exposition's order
  // within a family). A sorted vector of pointers to the keys' entries, 8 bytes a key: a map node per
  // key and family, with the lines' place in it, was about 100 bytes, 13 of them per filesystem.
  struct Family {
    const Head* head;  // in heads_ for the store's life, and in names_
    std::vector<const Entry*> members;
  };
  // The parts a key last published, by part id: the version whose text the store holds. A part's
  // lines and status items are kept like a key's own, under the part's key (part_key()), so that a
  // batch that changes a few parts of thousands touches those few.
  struct PartText {
    std::uint64_t version = 0;
    std::uint64_t seen = 0;  // the publish that last included it
  };
  using PartTexts = std::unordered_map<std::string, PartText>;
  // The families' lines in one blob; a family whose type clashes with its head's is left out (a bug:
  // the first type published wins).
  Rendered render(const std::vector<MetricFamily>& families);
  HeadPtr head_for(const MetricFamily& f);
  // `key`'s record: its lines `r` and its status items `status` as pack() made them. Null when it has
  // neither.
  static Record make_record(std::string_view key, const Rendered& r, std::string_view status);
  // Drops everything the store holds of `key`: its lines and its status items.
  void drop_key_locked(std::string_view key);
  // `key`'s record becomes `rec` (null: the key goes), replacing what it published before.
  void put_locked(std::string_view key, Record rec);
  // Drops a key's parts: their lines and status items.
  void drop_parts_locked(const std::string& key, const PartTexts& texts);
  static std::string part_key(std::string_view key, std::string_view id) {
    std::string k;
    k.reserve(key.size() + 1 + id.size());
    return k.append(key).append(1, '\x1e').append(id);
  }
  // `e` joins or leaves the members of the family of `head`; a family that no key publishes in goes.
  void join_locked(const Head* head, const Entry* e);
  void leave_locked(const Head* head, const Entry* e);

  mutable std::mutex mu_;
  std::map<std::string, Family, std::less<>> families_;  // by family name: the exposition order
  Keys keys_;
  std::unordered_map<std::string, PartTexts> part_texts_;                  // key -> its parts' text
  std::uint64_t publishes_ = 0;                                   // stamps PartText::seen
  // Records the store let go of since the newest exposition was built. Each exposition keeps the grave
  // made when it was built, and each grave the next one: every record an exposition shows stays alive
  // as long as that exposition, which holds no record itself. An exposition that held each one (a
  // de-duplicating set of 30,000 at 10,000 targets, on every scrape after a change) cost more than
  // the rest of building it.
  struct Grave {
    std::vector<Record> records;
    std::shared_ptr<Grave> next;
    Grave() = default;
    Grave(const Grave&) = delete;
    Grave& operator=(const Grave&) = delete;
    ~Grave();  // frees the chain behind it in a loop, not by recursion
  };
  // A record the store no longer shows, kept while an exposition may still show it.
  void bury_locked(const Record& r);
  mutable std::shared_ptr<const TextPieces> cache_;             // null after a change
  mutable std::shared_ptr<Grave> grave_ = std::make_shared<Grave>();
  mutable std::uint64_t builds_ = 0;
  mutable std::size_t last_parts_ = 0;  // pieces in the last exposition built
  mutable std::mutex heads_mu_;  // rendering runs outside mu_
  std::unordered_map<std::string, HeadPtr> heads_;  // by family name; as many as there are family names
  // Every head by id. Replaced, never changed, when a head is added (a few dozen in a daemon's life):
  // an exposition keeps the one it was built with, to unpack its pieces without the store.
  using Names = std::vector<HeadPtr>;
  std::shared_ptr<const Names> names_ = std::make_shared<const Names>();
};

// The text exposition (format 0.0.4) of one batch on its own: HELP/TYPE and samples per family.
std::string serialize(const Batch& batch);

}  // namespace fsaudit::metrics
