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
  // What one render() made: all the lines of one batch (or one part) in one allocation, packed, however
  // many families and series it has, and where each family's packed piece is in it. A separate string per
  // family and key, in its own shared pointer, cost more than the text itself (issue 33: about 200
  // bytes per series).
  using Blob = std::shared_ptr<const std::string>;
  struct Rendered {
    Blob blob;
    struct Lines {
      HeadPtr head;
      std::uint32_t off = 0, len = 0;
    };
    std::vector<Lines> lines;  // in the batch's family order; a family may come more than once
  };
  // One family's lines of one key: a packed piece of the key's blob.
  struct Slice {
    const Family* family;
    std::uint32_t off, len;
  };
  // What the store holds of one key (or part key), under one copy of the key: the blob its last
  // publish rendered and where each family's lines are in it, and its last status items, packed
  // (status_pack.hpp: a third of what the structs took; a reader unpacks only what it reads). An entry
  // goes when both are empty.
  struct KeyEntry {
    Blob blob;
    std::vector<Slice> slices;
    std::string status;
  };
  // Hashed, not ordered: keys and part ids share long prefixes (probe, mount point), which made
  // every comparison of an ordered map's walk a long memcmp at 1,000 targets. Its elements stay put
  // (the families point at them) until the key is erased.
  using Keys = std::unordered_map<std::string, KeyEntry>;
  using KeyNode = Keys::value_type;
  // A family: its head, and the keys that publish lines in it, sorted by key (the exposition's order
  // within a family). A sorted vector of pointers to the keys' entries, 8 bytes a key: a map node per
  // key and family, with the lines' place in it, was about 100 bytes, 13 of them per filesystem.
  struct Family {
    HeadPtr head;
    std::vector<const KeyNode*> members;
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
  // Drops everything the store holds of `key`: its lines and its status items.
  void drop_key_locked(const std::string& key);
  // `key`'s lines become `r`'s, replacing what it published before.
  void put_locked(const std::string& key, Rendered r);
  // `packed`: the key's status items as pack() made them ("" when it has none).
  void put_status_locked(const std::string& key, std::string packed);
  // Drops a key's parts: their lines and status items.
  void drop_parts_locked(const std::string& key, const PartTexts& texts);
  static std::string part_key(const std::string& key, const std::string& id) { return key + '\x1e' + id; }
  // `node` joins or leaves `family`'s members; a family that no key publishes in goes.
  void join_locked(Family& family, const KeyNode* node);
  void leave_locked(const Family* family, const KeyNode* node);

  mutable std::mutex mu_;
  std::map<std::string, Family, std::less<>> families_;  // by family name: the exposition order
  Keys keys_;
  std::unordered_map<std::string, PartTexts> part_texts_;                  // key -> its parts' text
  std::uint64_t publishes_ = 0;                                   // stamps PartText::seen
  // Blobs the store let go of since the newest exposition was built. Each exposition keeps the grave
  // made when it was built, and each grave the next one: every blob an exposition shows stays alive
  // as long as that exposition, which holds no blob itself. An exposition that held each blob (a
  // de-duplicating set of 30,000 at 10,000 targets, on every scrape after a change) cost more than
  // the rest of building it.
  struct Grave {
    std::vector<std::shared_ptr<const std::string>> blobs;
    std::shared_ptr<Grave> next;
    Grave() = default;
    Grave(const Grave&) = delete;
    Grave& operator=(const Grave&) = delete;
    ~Grave();  // frees the chain behind it in a loop, not by recursion
  };
  // A blob the store no longer shows, kept while an exposition may still show it.
  void bury_locked(const Blob& b);
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
