#include "daemon/metrics/store.hpp"

#include "daemon/metrics/line_pack.hpp"
#include "daemon/metrics/status_pack.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

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
std::string_view target_of(std::string_view key) {
  auto at = key.find('\x1f');
  if (at == std::string_view::npos) return {};
  key.remove_prefix(at + 1);
  return key.substr(0, key.find('\x1e'));
}

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

void Store::drop_key_locked(const std::string& key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  const Family* last = nullptr;
  for (const auto& sl : it->second.slices)
    if (sl.family != last) leave_locked(last = sl.family, &*it);  // a family's slices are adjacent
  bury_locked(it->second.blob);
  keys_.erase(it);
}

Store::Grave::~Grave() {
  auto n = std::move(next);
  // Only this grave held the next one: nothing else can take it now, so it is freed here, in turn.
  while (n && n.use_count() == 1) n = std::move(n->next);
}

void Store::bury_locked(const Blob& b) {
  // Only the store holds the newest grave: no exposition built since shows anything, so nothing
  // needs keeping.
  if (b && grave_.use_count() > 1) grave_->blobs.push_back(b);
}

void Store::join_locked(Family& family, const KeyNode* node) {
  auto& m = family.members;
  auto at = std::lower_bound(m.begin(), m.end(), node, [](const KeyNode* a, const KeyNode* b) { return a->first < b->first; });
  if (at == m.end() || *at != node) m.insert(at, node);
}

void Store::leave_locked(const Family* family, const KeyNode* node) {
  auto f = families_.find(family->head->name);
  if (f == families_.end()) return;
  auto& m = f->second.members;
  auto at = std::lower_bound(m.begin(), m.end(), node, [](const KeyNode* a, const KeyNode* b) { return a->first < b->first; });
  if (at != m.end() && *at == node) m.erase(at);
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
  std::string blob, lines;  // `lines`: one family's, as text, before they are packed into the blob
  line_pack::start(blob, words);
  for (const auto& f : families) {
    auto head = head_for(f);
    if (head->type != type_name(f.type)) continue;  // a type clash is a bug; the first type published wins
    lines.clear();
    put_lines(lines, f);
    const auto off = line_pack::add(blob, words, head->id, head->name, lines);
    r.lines.push_back({std::move(head), static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(blob.size() - off)});
  }
  blob.shrink_to_fit();
  if (!r.lines.empty()) r.blob = std::make_shared<const std::string>(std::move(blob));
  return r;
}

void Store::put_locked(const std::string& key, Rendered r) {
  auto kf = keys_.try_emplace(key).first;
  const KeyNode* node = &*kf;
  KeyEntry& e = kf->second;
  // The new slices, a family's together (in the order its lines came), each family found in the map once.
  std::vector<Slice> slices;
  slices.reserve(r.lines.size());
  std::vector<std::pair<const Head*, Family*>> found;
  for (std::size_t i = 0; i < r.lines.size(); ++i) {
    const Head* h = r.lines[i].head.get();
    if (std::any_of(found.begin(), found.end(), [&](const auto& x) { return x.first == h; })) continue;
    auto [it, inserted] = families_.try_emplace(h->name);
    if (inserted) it->second.head = r.lines[i].head;
    found.emplace_back(h, &it->second);
    for (std::size_t j = i; j < r.lines.size(); ++j)
      if (r.lines[j].head.get() == h) slices.push_back({&it->second, r.lines[j].off, r.lines[j].len});
  }
  // Families it no longer publishes in: leave them. Those it newly does: join. (Neither for the rest:
  // a key republishing the same families, nearly every publish, touches no family.)
  const Family* last = nullptr;
  for (const auto& sl : e.slices) {
    if (sl.family == last) continue;
    last = sl.family;
    if (std::none_of(found.begin(), found.end(), [&](const auto& x) { return x.second == sl.family; }))
      leave_locked(sl.family, node);
  }
  for (const auto& f : found) {
    Family* fam = f.second;
    if (std::none_of(e.slices.begin(), e.slices.end(), [fam](const Slice& sl) { return sl.family == fam; }))
      join_locked(*fam, node);
  }
  if (e.blob != r.blob) bury_locked(e.blob);
  e.blob = std::move(r.blob);
  e.slices = std::move(slices);
  if (e.slices.empty() && e.status.empty()) keys_.erase(kf);  // no family lists it any more
}

void Store::put_status_locked(const std::string& key, std::string packed) {
  auto it = keys_.find(key);
  if (packed.empty()) {
    if (it != keys_.end() && it->second.slices.empty()) keys_.erase(it);
    else if (it != keys_.end()) std::string().swap(it->second.status);  // its buffer goes too
    return;
  }
  if (it == keys_.end()) it = keys_.try_emplace(key).first;
  it->second.status = std::move(packed);
}

void Store::drop_parts_locked(const std::string& key, const PartTexts& texts) {
  for (const auto& [id, text] : texts) {
    auto pk = part_key(key, id);
    drop_key_locked(pk);
  }
}

void Store::publish(const std::string& key, const Batch& batch) {
  // Serialise outside the lock: the only work that grows with the batch, and none with the store.
  // A part the key published before at the same version keeps the text it had then (one lookup);
  // a whole batch drops the parts it no longer includes, a delta keeps them.
  Rendered own = render(batch.own_families());
  std::string own_status = pack(batch.status, target_of(key));
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
    const std::string* id;
    Rendered lines;
    std::string status;  // packed
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
      built.push_back({&it->first, render(b.families()), pack(b.status, target_of(key))});
    }
    slot.seen = stamp;
  }
  std::lock_guard l(mu_);
  put_locked(key, std::move(own));
  for (auto& b : built) {
    auto pk = part_key(key, *b.id);
    put_locked(pk, std::move(b.lines));
    put_status_locked(pk, std::move(b.status));
  }
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
  put_status_locked(key, std::move(own_status));
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
  if (auto it = keys_.find(key); it != keys_.end()) {
    changed = changed || !it->second.slices.empty();
    drop_key_locked(key);
  }
  if (changed) cache_.reset();
}

void Store::retain(const std::vector<std::string>& keep) {
  std::set<std::string> k(keep.begin(), keep.end());
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
  auto kept = [&](const std::string& key) {
    if (k.count(key)) return true;
    for (auto at = key.find('\x1e'); at != std::string::npos; at = key.find('\x1e', at + 1))
      if (k.count(key.substr(0, at))) return true;
    return false;
  };
  gone.clear();
  for (const auto& [key, entry] : keys_)
    if (!kept(key)) {
      gone.push_back(key);
      changed = changed || !entry.slices.empty();
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
    names = names_;  // every head a blob in the store names: each was made before its blob was put
  }
  text->unpack = [n = names.get()](std::string_view held, std::string& out) {
    line_pack::unpack(held, [n](std::uint32_t id) { return id < n->size() ? std::string_view((*n)[id]->name) : std::string_view(); }, out);
  };
  text->keep(std::move(names));
  // About as many pieces as last time: counting them first was a second walk of every family's keys.
  text->parts.reserve(last_parts_ + last_parts_ / 8 + 16);
  for (const auto& [name, f] : families_) {
    text->keep(f.head);
    text->add(f.head->text);
    for (const KeyNode* node : f.members) {
      const auto& e = node->second;
      const std::string_view blob(*e.blob);
      // A key's slices of one family are adjacent: the walk stops at the first other one after them.
      bool in = false;
      for (const auto& sl : e.slices) {
        if (sl.family != &f) {
          if (in) break;
          continue;
        }
        in = true;
        const auto piece = blob.substr(sl.off, sl.len);
        text->add_packed(piece, line_pack::text_size(piece));
      }
    }
  }
  // The blobs it shows are the store's now; what the store lets go of from here on goes to a grave
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
    for (const auto& [key, e] : keys_)
      if (!e.status.empty()) packed.emplace_back(key, e.status);
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
  for (const auto& [key, e] : keys_)
    if (!e.status.empty()) fn(key, unpack(e.status, target_of(key)));
}

std::uint64_t Store::builds() const {
  std::lock_guard l(mu_);
  return builds_;
}

}  // namespace fsaudit::metrics
