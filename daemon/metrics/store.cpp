#include "daemon/metrics/store.hpp"

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
  for (const auto name : it->second.families) drop_entry_locked(name, it->first);  // `name` may dangle afterwards
  keys_.erase(it);
}

Store::Grave::~Grave() {
  auto n = std::move(next);
  // Only this grave held the next one: nothing else can take it now, so it is freed here, in turn.
  while (n && n.use_count() == 1) n = std::move(n->next);
}

void Store::bury_locked(const Chunk& c) {
  // Only the store holds the newest grave: no exposition built since shows anything, so nothing
  // needs keeping.
  if (c.blob && grave_.use_count() > 1) grave_->blobs.push_back(c.blob);
}

void Store::drop_entry_locked(std::string_view family, std::string_view key) {
  auto f = families_.find(family);
  if (f == families_.end()) return;
  if (auto e = f->second.by_key.find(key); e != f->second.by_key.end()) {
    bury_locked(e->second.first);
    if (e->second.more)
      for (const auto& c : *e->second.more) bury_locked(c);
    f->second.by_key.erase(e);
  }
  if (f->second.by_key.empty()) families_.erase(f);
}

Store::HeadPtr Store::head_for(const MetricFamily& f) {
  std::lock_guard l(heads_mu_);
  auto [it, fresh] = heads_.try_emplace(f.name);
  if (fresh) it->second = std::make_shared<const Head>(Head{f.name, type_name(f.type), head_of(f)});
  return it->second;
}

std::vector<Store::Piece> Store::render(const std::vector<MetricFamily>& families) {
  std::vector<Piece> pieces;
  pieces.reserve(families.size());
  std::string blob;
  std::size_t want = 0;
  for (const auto& f : families) want += f.metric.size() * (f.type == MetricType::Histogram ? 2048 : 128);
  blob.reserve(want);
  for (const auto& f : families) {
    auto head = head_for(f);
    if (head->type != type_name(f.type)) continue;  // a type clash is a bug; the first type published wins
    const auto off = blob.size();
    put_lines(blob, f);
    pieces.push_back({std::move(head), {nullptr, static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(blob.size() - off)}});
  }
  blob.shrink_to_fit();
  auto shared = std::make_shared<const std::string>(std::move(blob));
  for (auto& p : pieces) p.lines.blob = shared;
  return pieces;
}

void Store::put_locked(const std::string& key, const std::vector<const Piece*>& pieces) {
  // The key's entries are replaced in place: its families keep their map nodes, and only those it
  // no longer publishes are dropped (below).
  auto kf = keys_.try_emplace(key).first;
  const std::string_view k = kf->first;
  std::vector<std::string_view> old_names = std::move(kf->second.families);
  kf->second.families.clear();
  std::vector<std::string_view> names;
  auto add = [&](const Piece& first, const Piece* const* more, std::size_t n_more) {
    auto [it, inserted] = families_.try_emplace(first.head->name);
    auto& fam = it->second;
    if (inserted) fam.head = first.head;
    // One family in several pieces of one batch (append of two batches): keep them all.
    auto& chunks = fam.by_key[k];
    const bool first_piece = std::find(names.begin(), names.end(), first.head->name) == names.end();
    if (first_piece) {
      bury_locked(chunks.first);
      if (chunks.more)
        for (const auto& c : *chunks.more) bury_locked(c);
      chunks.first = first.lines;  // replaces the last publish's
      chunks.more.reset();
    } else {
      chunks.add_more(first.lines);
    }
    for (std::size_t i = 0; i < n_more; ++i) chunks.add_more(more[i]->lines);
    if (chunks.more) chunks.more->shrink_to_fit();
    if (first_piece) names.push_back(it->first);
  };
  // Pieces grouped by family first: the store's family map is searched once per family.
  std::vector<std::vector<const Piece*>> groups;
  for (const Piece* p : pieces) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.front()->head == p->head; });
    if (g == groups.end()) groups.emplace_back().push_back(p);
    else g->push_back(p);
  }
  for (const auto& g : groups) add(*g.front(), g.data() + 1, g.size() - 1);
  for (const auto name : old_names)
    if (std::find(names.begin(), names.end(), name) == names.end()) drop_entry_locked(name, k);
  kf->second.families = std::move(names);
  if (kf->second.families.empty() && kf->second.status.empty()) keys_.erase(kf);  // nothing lists `k` any more
}

void Store::put_status_locked(const std::string& key, std::string packed) {
  auto it = keys_.find(key);
  if (packed.empty()) {
    if (it != keys_.end() && it->second.families.empty()) keys_.erase(it);
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
  std::vector<Piece> own = render(batch.own_families());
  std::string own_status = pack(batch.status);
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
    std::vector<Piece> pieces;
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
      built.push_back({&it->first, render(b.families()), pack(b.status)});
    }
    slot.seen = stamp;
  }
  std::lock_guard l(mu_);
  std::vector<const Piece*> ptrs;
  for (const auto& p : own) ptrs.push_back(&p);
  put_locked(key, ptrs);
  for (auto& b : built) {
    ptrs.clear();
    for (const auto& p : b.pieces) ptrs.push_back(&p);
    auto pk = part_key(key, *b.id);
    put_locked(pk, ptrs);
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
    changed = changed || !it->second.families.empty();
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
      changed = changed || !entry.families.empty();
    }
  for (const auto& key : gone) drop_key_locked(key);
  if (changed) cache_.reset();
}

std::shared_ptr<const TextPieces> Store::exposition() const {
  std::lock_guard l(mu_);
  if (cache_) return cache_;
  auto text = std::make_shared<TextPieces>();
  // About as many pieces as last time: counting them first was a second walk of every family's keys.
  text->parts.reserve(last_parts_ + last_parts_ / 8 + 16);
  for (const auto& [name, f] : families_) {
    text->keep(f.head);
    text->add(f.head->text);
    for (const auto& [key, chunks] : f.by_key) {
      text->add(chunks.first.view());
      if (chunks.more)
        for (const auto& c : *chunks.more) text->add(c.view());
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
  for (auto& [key, p] : packed) r.emplace(std::move(key), unpack(p));
  return r;
}

void Store::visit_status(const std::function<void(const std::string& key, const StatusItems& items)>& fn) const {
  std::lock_guard l(mu_);
  for (const auto& [key, e] : keys_)
    if (!e.status.empty()) fn(key, unpack(e.status));
}

std::uint64_t Store::builds() const {
  std::lock_guard l(mu_);
  return builds_;
}

}  // namespace fsaudit::metrics
