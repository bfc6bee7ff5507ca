#include "daemon/metrics/store.hpp"

#include "daemon/core/job_key.hpp"
#include "daemon/metrics/line_pack.hpp"
#include "daemon/metrics/status_pack.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

namespace fsaudit::metrics {
namespace {

const char* type_name(MetricType t) {
  switch (t) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Histogram: return "histogram";
    case MetricType::Summary: return "summary";
    default: return "untyped";
  }
}

void put_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back as v
    out.append(buf, r.ptr);
  }
}

void put_number(std::string& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void put_escaped(std::string& out, const std::string& s, bool quote) {
  // Runs without anything to escape (nearly every value) are appended in one piece.
  const char* special = quote ? "\\\n\"" : "\\\n";
  std::size_t from = 0;
  while (true) {
    auto at = s.find_first_of(special, from);
    if (at == std::string::npos) {
      out.append(s, from, std::string::npos);
      return;
    }
    out.append(s, from, at - from);
    out += s[at] == '\\' ? "\\\\" : s[at] == '\n' ? "\\n" : "\\\"";
    from = at + 1;
  }
}

// Appends `a="x",b="y"`.
void put_labels(std::string& out, const std::vector<Label>& labels) {
  bool first = true;
  for (const auto& l : labels) {
    if (!first) out += ',';
    first = false;
    out += l.name;
    out += "=\"";
    put_escaped(out, l.value, true);
    out += '"';
  }
}

// name{a="x",b="y"[,le="..."]} value
void put_sample(std::string& out, const std::string& name, const char* suffix, const std::string& labels,
                const char* extra_name, double extra_value, double value, bool count_value = false,
                std::uint64_t count = 0) {
  out += name;
  out += suffix;
  if (!labels.empty() || extra_name) {
    out += '{';
    out += labels;
    if (extra_name) {
      if (!labels.empty()) out += ',';
      out += extra_name;
      out += "=\"";
      put_number(out, extra_value);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  if (count_value) put_number(out, count);
  else put_number(out, value);
  out += '\n';
}

void put_lines(std::string& out, const MetricFamily& f) {
  std::string labels;  // rendered once per series (a histogram has many lines), in one reused buffer
  for (const auto& m : f.metric) {
    labels.clear();
    put_labels(labels, m.label);
    switch (f.type) {
      case MetricType::Counter:
        put_sample(out, f.name, "", labels, nullptr, 0, m.counter.value);
        break;
      case MetricType::Gauge:
        put_sample(out, f.name, "", labels, nullptr, 0, m.gauge.value);
        break;
      case MetricType::Histogram:
      case MetricType::Summary:
        for (const auto& b : m.histogram.bucket)
          put_sample(out, f.name, "_bucket", labels, "le", b.upper_bound, 0, true, b.cumulative_count);
        put_sample(out, f.name, "_sum", labels, nullptr, 0, m.histogram.sample_sum);
        put_sample(out, f.name, "_count", labels, nullptr, 0, 0, true, m.histogram.sample_count);
        break;
      default:
        put_sample(out, f.name, "", labels, nullptr, 0, m.untyped.value);
        break;
    }
  }
}

// The label texts (`name="value"`) a batch's lines repeat most, by the bytes naming each once would
// save: a key's target, device or stack, on every line it has. Looked for among the first 16
// distinct labels, which bounds the search however large the batch is.
line_pack::Words choose_words(const std::vector<MetricFamily>& families) {
  struct Candidate {
    const Label* label;
    std::size_t count;
    std::size_t score() const { return (count - 1) * (label->name.size() + label->value.size() + 3); }
  };
  std::vector<Candidate> c;
  for (const auto& f : families)
    for (const auto& m : f.metric)
      for (const auto& l : m.label) {
        auto it = std::find_if(c.begin(), c.end(),
                               [&](const Candidate& x) { return x.label->name == l.name && x.label->value == l.value; });
        if (it != c.end()) ++it->count;
        else if (c.size() < 16) c.push_back({&l, 1});
      }
  std::stable_sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.score() > b.score(); });
  line_pack::Words w;
  for (const auto& x : c) {
    if (w.count == line_pack::kMaxWords || x.score() < 16) break;  // a short or rare one saves nothing
    auto& text = w.word[w.count++];
    text = x.label->name + "=\"";
    put_escaped(text, x.label->value, true);
    text += '"';
  }
  return w;
}

// The target a key (or part key) names: "capacity\x1f/srv" names /srv. Its status items name it
// again; status_pack keeps it once, here.
std::string_view target_of(std::string_view key) { return split_job_key(key).target; }

std::string head_of(const MetricFamily& f) {
  std::string h = "# HELP " + f.name + " ";
  put_escaped(h, f.help, false);
  h += "\n# TYPE " + f.name + " " + type_name(f.type) + "\n";
  return h;
}

}  // namespace

std::string serialize(const Batch& batch) {
  std::string out;
  auto fams = batch.families();
  std::sort(fams.begin(), fams.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& f : fams) {
    out += head_of(f);
    put_lines(out, f);
  }
  return out;
}

// A record: four 32-bit lengths (key, status, lines, slices), the slices (a head and where its piece
// is in the lines), then the key, the status and the lines. Read with memcpy: nothing in it is aligned.
struct Store::RecordView {
  static constexpr std::size_t kHeader = 4 * sizeof(std::uint32_t);
  static constexpr std::size_t kSlice = sizeof(const Head*) + 2 * sizeof(std::uint32_t);
  struct Slice {
    const Head* head;
    std::uint32_t off, len;
  };
  const char* p;  // null: an empty record
  std::uint32_t u32(std::size_t i) const {
    std::uint32_t v = 0;
    if (p) std::memcpy(&v, p + i * sizeof v, sizeof v);
    return v;
  }
  std::size_t slices() const { return u32(3); }
  Slice slice(std::size_t i) const {
    Slice s;
    const char* q = p + kHeader + i * kSlice;
    std::memcpy(&s.head, q, sizeof s.head);
    std::memcpy(&s.off, q + sizeof s.head, sizeof s.off);
    std::memcpy(&s.len, q + sizeof s.head + sizeof s.off, sizeof s.len);
    return s;
  }
  const char* text() const { return p + kHeader + slices() * kSlice; }
  std::string_view key() const { return p ? std::string_view(text(), u32(0)) : std::string_view(); }
  std::string_view status() const { return p ? std::string_view(text() + u32(0), u32(1)) : std::string_view(); }
  std::string_view lines() const { return p ? std::string_view(text() + u32(0) + u32(1), u32(2)) : std::string_view(); }
  std::string_view piece(const Slice& s) const { return lines().substr(s.off, s.len); }
  // Whether a slice of `head` is among the record's (a family's slices are adjacent: few heads).
  bool has(const Head* head) const {
    for (std::size_t i = 0; i < slices(); ++i)
      if (slice(i).head == head) return true;
    return false;
  }
  // Calls fn(head) once per family the record has lines in.
  template <class F>
  void each_family(F&& fn) const {
    const Head* last = nullptr;
    for (std::size_t i = 0; i < slices(); ++i)
      if (auto h = slice(i).head; h != last) fn(last = h);
  }
};

std::string_view Store::Entry::key() const { return RecordView{record.get()}.key(); }

Store::Record Store::make_record(std::string_view key, const Rendered& r, std::string_view status) {
  if (r.lines.empty() && status.empty()) return nullptr;
  // A family's slices together, in the order the family first came.
  std::vector<const Rendered::Lines*> order;
  order.reserve(r.lines.size());
  for (std::size_t i = 0; i < r.lines.size(); ++i) {
    const Head* h = r.lines[i].head.get();
    if (std::any_of(order.begin(), order.end(), [h](const Rendered::Lines* l) { return l->head.get() == h; })) continue;
    for (std::size_t j = i; j < r.lines.size(); ++j)
      if (r.lines[j].head.get() == h) order.push_back(&r.lines[j]);
  }
  const std::string_view lines = r.lines.empty() ? std::string_view() : std::string_view(r.blob);
  const std::size_t size = RecordView::kHeader + order.size() * RecordView::kSlice + key.size() + status.size() + lines.size();
  auto rec = std::make_shared_for_overwrite<char[]>(size);
  char* q = rec.get();
  for (std::size_t n : {key.size(), status.size(), lines.size(), order.size()}) {
    if (n > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("a metrics key's text of 4 GiB or more");
    const auto v = static_cast<std::uint32_t>(n);
    std::memcpy(q, &v, sizeof v);
    q += sizeof v;
  }
  for (const auto* l : order) {
    const Head* h = l->head.get();
    std::memcpy(q, &h, sizeof h);
    std::memcpy(q + sizeof h, &l->off, sizeof l->off);
    std::memcpy(q + sizeof h + sizeof l->off, &l->len, sizeof l->len);
    q += RecordView::kSlice;
  }
  for (auto part : {key, status, lines}) {
    if (!part.empty()) std::memcpy(q, part.data(), part.size());
    q += part.size();
  }
  return rec;
}

void Store::drop_key_locked(std::string_view key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  const Entry* e = &*it;
  RecordView{e->record.get()}.each_family([&](const Head* h) { leave_locked(h, e); });
  bury_locked(e->record);
  keys_.erase(it);
}

Store::Grave::~Grave() {
  auto n = std::move(next);
  // Only this grave held the next one: nothing else can take it now, so it is freed here, in turn.
  while (n && n.use_count() == 1) n = std::move(n->next);
}

void Store::bury_locked(const Record& r) {
  // Only the store holds the newest grave: no exposition built since shows anything, so nothing
  // needs keeping.
  if (r && grave_.use_count() > 1) grave_->records.push_back(r);
}

namespace {
template <class E>
bool by_key(const E* a, const E* b) {
  return a->key() < b->key();
}
}  // namespace

void Store::join_locked(const Head* head, const Entry* e) {
  auto [f, fresh] = families_.try_emplace(head->name);
  if (fresh) f->second.head = head;
  auto& m = f->second.members;
  auto at = std::lower_bound(m.begin(), m.end(), e, by_key<Entry>);
  if (at == m.end() || *at != e) m.insert(at, e);
}

void Store::leave_locked(const Head* head, const Entry* e) {
  auto f = families_.find(head->name);
  if (f == families_.end()) return;
  auto& m = f->second.members;
  auto at = std::lower_bound(m.begin(), m.end(), e, by_key<Entry>);
  if (at != m.end() && *at == e) m.erase(at);
  if (m.empty()) families_.erase(f);
  // A family that 10,000 keys published in and few still do gives the room back.
  else if (m.capacity() > 64 && m.size() < m.capacity() / 4) m.shrink_to_fit();
}

Store::HeadPtr Store::head_for(const MetricFamily& f) {
  std::lock_guard l(heads_mu_);
  auto [it, fresh] = heads_.try_emplace(f.name);
  if (fresh) {
    auto names = std::make_shared<Names>(*names_);
    it->second = std::make_shared<const Head>(
        Head{f.name, type_name(f.type), head_of(f), static_cast<std::uint32_t>(names->size())});
    names->push_back(it->second);
    names_ = std::move(names);
  }
  return it->second;
}

Store::Rendered Store::render(const std::vector<MetricFamily>& families) {
  Rendered r;
  r.lines.reserve(families.size());
  const auto words = choose_words(families);
  std::string& blob = r.blob;
  std::string lines;  // one family's, as text, before they are packed into the blob
  line_pack::start(blob, words);
  for (const auto& f : families) {
    auto head = head_for(f);
    if (head->type != type_name(f.type)) continue;  // a type clash is a bug; the first type published wins
    lines.clear();
    put_lines(lines, f);
    const auto off = line_pack::add(blob, words, head->id, head->name, lines);
    r.lines.push_back({std::move(head), static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(blob.size() - off)});
  }
  return r;
}


void Store::put_locked(std::string_view key, Record rec) {
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    if (!rec) return;
    it = keys_.insert(Entry{std::move(rec)}).first;
    const Entry* e = &*it;
    RecordView{e->record.get()}.each_family([&](const Head* h) { join_locked(h, e); });
    return;
  }
  const Entry* e = &*it;
  const RecordView was{e->record.get()}, now{rec.get()};
  // Families it no longer publishes in: leave them. Those it newly does: join. (Neither for the rest:
  // a key republishing the same families, nearly every publish, touches no family.)
  was.each_family([&](const Head* h) {
    if (!now.has(h)) leave_locked(h, e);
  });
  now.each_family([&](const Head* h) {
    if (!was.has(h)) join_locked(h, e);
  });
  bury_locked(e->record);
  if (rec) e->record = std::move(rec);  // the same key: its place in the set and in families holds
  else keys_.erase(it);
}

void Store::drop_parts_locked(const std::string& key, const PartTexts& texts) {
  for (const auto& [id, text] : texts) drop_key_locked(part_key(key, id));
}

void Store::publish(const std::string& key, const Batch& batch) {
  // Serialise outside the lock: the only work that grows with the batch, and none with the store.
  // A part the key published before at the same version keeps the text it had then (one lookup);
  // a whole batch drops the parts it no longer includes, a delta keeps them.
  Record own = make_record(key, render(batch.own_families()), pack(batch.status, target_of(key)));
  PartTexts texts;
  std::uint64_t stamp = 0;
  if (!batch.parts().empty()) {
    std::lock_guard l(mu_);
    stamp = ++publishes_;
    if (auto it = part_texts_.find(key); it != part_texts_.end()) {
      texts = std::move(it->second);
      part_texts_.erase(it);
    }
  }
  struct Built {
    std::string key;  // the part's
    Record record;
  };
  std::vector<Built> built;
  for (const auto& part : batch.parts()) {
    auto it = texts.find(part.id);
    if (it == texts.end()) it = texts.try_emplace(part.id).first;
    else if (it->second.seen == stamp) continue;  // one id twice: the first wins
    auto& slot = it->second;
    if (slot.seen == 0 || slot.version != part.version) {
      Batch b;
      part.build(b);
      slot.version = part.version;
      auto pk = part_key(key, part.id);
      auto rec = make_record(pk, render(b.families()), pack(b.status, target_of(key)));
      built.push_back({std::move(pk), std::move(rec)});
    }
    slot.seen = stamp;
  }
  std::lock_guard l(mu_);
  put_locked(key, std::move(own));
  for (auto& b : built) put_locked(b.key, std::move(b.record));
  if (!batch.parts_delta && batch.parts().empty()) {  // a whole batch without parts: any the key had go
    if (auto it = part_texts_.find(key); it != part_texts_.end()) {
      drop_parts_locked(key, it->second);
      part_texts_.erase(it);
    }
  } else if (!batch.parts_delta) {
    PartTexts gone;
    for (auto it = texts.begin(); it != texts.end();)
      if (it->second.seen != stamp) gone.insert(texts.extract(it++));
      else ++it;
    drop_parts_locked(key, gone);
  }
  if (!texts.empty()) part_texts_[key] = std::move(texts);
  cache_.reset();
}

void Store::remove(const std::string& key) {
  std::lock_guard l(mu_);
  bool changed = false;
  if (auto it = part_texts_.find(key); it != part_texts_.end()) {
    drop_parts_locked(key, it->second);
    part_texts_.erase(it);
    changed = true;
  }
  if (auto it = keys_.find(std::string_view(key)); it != keys_.end()) {
    changed = changed || RecordView{it->record.get()}.slices() > 0;
    drop_key_locked(key);
  }
  if (changed) cache_.reset();
}

void Store::retain(const std::vector<std::string>& keep) {
  std::set<std::string, std::less<>> k(keep.begin(), keep.end());
  std::lock_guard l(mu_);
  std::vector<std::string> gone;
  for (const auto& [key, texts] : part_texts_)
    if (!k.count(key)) gone.push_back(key);
  for (const auto& key : gone) {
    drop_parts_locked(key, part_texts_[key]);
    part_texts_.erase(key);
  }
  bool changed = !gone.empty();
  // A part key stays with its key. By the key in `keep`, not by part_texts_: a publish of that key
  // holds its part texts outside the lock while it builds them.
  auto kept = [&](std::string_view key) {
    if (k.count(key)) return true;
    for (auto at = key.find('\x1e'); at != std::string_view::npos; at = key.find('\x1e', at + 1))
      if (k.count(key.substr(0, at))) return true;
    return false;
  };
  gone.clear();
  for (const auto& e : keys_) {
    const RecordView v{e.record.get()};
    if (!kept(v.key())) {
      gone.emplace_back(v.key());
      changed = changed || v.slices() > 0;
    }
  }
  for (const auto& key : gone) drop_key_locked(key);
  if (changed) cache_.reset();
}

std::shared_ptr<const TextPieces> Store::exposition() const {
  std::lock_guard l(mu_);
  if (cache_) return cache_;
  auto text = std::make_shared<TextPieces>();
  std::shared_ptr<const Names> names;
  {
    std::lock_guard h(heads_mu_);
    names = names_;  // every head a record in the store names: each was made before its record was put
  }
  text->unpack = [n = names.get()](std::string_view held, std::string& out) {
    line_pack::unpack(
        held,
        [](const void* names, std::uint32_t id) {
          const auto& heads = *static_cast<const Names*>(names);
          return id < heads.size() ? std::string_view(heads[id]->name) : std::string_view();
        },
        n, out);
  };
  text->also_reads = [](std::string_view held) { return line_pack::words_of(held); };
  text->keep(std::move(names));  // and with them the heads' texts
  // About as many pieces as last time: counting them first was a second walk of every family's keys.
  text->parts.reserve(last_parts_ + last_parts_ / 8 + 16);
  for (const auto& [name, f] : families_) {
    text->add(f.head->text);
    for (const Entry* e : f.members) {
      const RecordView v{e->record.get()};
      // A key's slices of one family are adjacent: the walk stops at the first other one after them.
      bool in = false;
      for (std::size_t i = 0; i < v.slices(); ++i) {
        const auto sl = v.slice(i);
        if (sl.head != f.head) {
          if (in) break;
          continue;
        }
        in = true;
        const auto piece = v.piece(sl);
        text->add_packed(piece, line_pack::text_size(piece));
      }
    }
  }
  // The records it shows are the store's now; what the store lets go of from here on goes to a grave
  // this text keeps (Grave).
  auto fresh = std::make_shared<Grave>();
  grave_->next = fresh;
  grave_ = std::move(fresh);
  text->keep(grave_);
  last_parts_ = text->parts.size();
  cache_ = std::move(text);
  ++builds_;
  return cache_;
}

std::map<std::string, StatusItems> Store::status() const {
  std::vector<std::pair<std::string, std::string>> packed;
  {
    std::lock_guard l(mu_);
    for (const auto& e : keys_) {
      const RecordView v{e.record.get()};
      if (!v.status().empty()) packed.emplace_back(v.key(), v.status());
    }
  }
  std::map<std::string, StatusItems> r;
  for (auto& [key, p] : packed) {
    auto items = unpack(p, target_of(key));
    r.emplace(std::move(key), std::move(items));
  }
  return r;
}

void Store::visit_status(const std::function<void(const std::string& key, const StatusItems& items)>& fn) const {
  std::lock_guard l(mu_);
  std::string key;
  for (const auto& e : keys_) {
    const RecordView v{e.record.get()};
    if (v.status().empty()) continue;
    key.assign(v.key());
    fn(key, unpack(v.status(), target_of(key)));
  }
}

std::uint64_t Store::builds() const {
  std::lock_guard l(mu_);
  return builds_;
}

}  // namespace fsaudit::metrics
