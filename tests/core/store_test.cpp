#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "daemon/metrics/store.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit;

TEST(Store, MergesFamiliesAcrossProbesIntoOneHelpLine) {
  metrics::Store s;
  metrics::Batch a, b;
  a.gauge("fsaudit_filesystem_size_bytes", "Size.", {{"target", "/a"}}, 10);
  b.gauge("fsaudit_filesystem_size_bytes", "Size.", {{"target", "/b"}}, 20);
  s.publish("capacity\x1f/a", a);
  s.publish("capacity\x1f/b", b);
  auto text = s.text();
  EXPECT_EQ(fsaudit::testing::scrape_value(text, "fsaudit_filesystem_size_bytes", {{"target", "/b"}}), 20);
  size_t helps = 0;
  for (size_t p = 0; (p = text.find("# HELP fsaudit_filesystem_size_bytes", p)) != std::string::npos; ++p) ++helps;
  EXPECT_EQ(helps, 1u);
}

TEST(Store, RepublishReplacesAndRetainDrops) {
  metrics::Store s;
  metrics::Batch a;
  a.gauge("x", "X.", {{"target", "/a"}}, 1);
  s.publish("k1", a);
  metrics::Batch a2;
  a2.gauge("x", "X.", {{"target", "/a"}}, 2);
  s.publish("k1", a2);
  EXPECT_EQ(fsaudit::testing::scrape_value(s.text(), "x"), 2);
  s.retain({"other"});
  EXPECT_TRUE(std::isnan(fsaudit::testing::scrape_value(s.text(), "x")));
}

TEST(Store, StateSetAndHistogram) {
  metrics::Batch b;
  b.stateset("fsaudit_zfs_pool_state", "State.", {{"pool", "tank"}}, {"online", "degraded"}, "degraded");
  b.histogram("lat_seconds", "Latency.", {{"target", "/"}}, {0.001, 0.01}, {3, 5}, 0.02);
  metrics::Store s;
  s.publish("k", b);
  auto t = s.text();
  EXPECT_EQ(fsaudit::testing::scrape_value(t, "fsaudit_zfs_pool_state", {{"state", "online"}}), 0);
  EXPECT_EQ(fsaudit::testing::scrape_value(t, "fsaudit_zfs_pool_state", {{"state", "degraded"}}), 1);
  EXPECT_EQ(fsaudit::testing::scrape_value(t, "lat_seconds_bucket", {{"le", "0.01"}}), 5);
  EXPECT_EQ(fsaudit::testing::scrape_value(t, "lat_seconds_bucket", {{"le", "+Inf"}}), 5);
  EXPECT_EQ(fsaudit::testing::scrape_value(t, "lat_seconds_count"), 5);
}

TEST(Store, SerialisesOncePerChangeAndServesTheSameTextBetweenChanges) {
  metrics::Store s;
  metrics::Batch a;
  a.gauge("x", "X.", {{"target", "/a"}}, 1);
  s.publish("k1", a);
  auto first = s.exposition();
  auto again = s.exposition();
  EXPECT_EQ(first.get(), again.get()) << "a scrape without a change built the exposition again";
  EXPECT_EQ(s.builds(), 1u);
  metrics::Batch b;
  b.gauge("x", "X.", {{"target", "/b"}}, 2);
  s.publish("k2", b);
  auto third = s.exposition();
  EXPECT_NE(first.get(), third.get());
  EXPECT_EQ(s.builds(), 2u);
  // The old exposition is immutable: a scrape in progress keeps a consistent text.
  EXPECT_EQ(first->join().find("/b"), std::string::npos);
  EXPECT_NE(third->join().find("x{target=\"/b\"} 2\n"), std::string::npos) << third->join();
  EXPECT_EQ(third->size, third->join().size());
  s.remove("nothing-there");
  EXPECT_EQ(s.exposition().get(), third.get()) << "a no-op remove invalidated the text";
}

// A scrape serves the text that publishing rendered, without copying it: the exposition holds the very
// pieces the store keeps, so a key's unchanged lines are the same bytes in two scrapes' expositions.
TEST(Store, TheExpositionIsTheStoresOwnPiecesNotACopy) {
  metrics::Store s;
  metrics::Batch a, b;
  a.gauge("x", "X.", {{"target", "/a"}}, 1);
  b.gauge("x", "X.", {{"target", "/b"}}, 2);
  s.publish("k1", a);
  s.publish("k2", b);
  auto first = s.exposition();
  metrics::Batch b2;
  b2.gauge("x", "X.", {{"target", "/b"}}, 3);
  s.publish("k2", b2);
  auto second = s.exposition();
  ASSERT_EQ(first->parts.size(), 3u);  // the family head, k1's lines, k2's lines
  ASSERT_EQ(second->parts.size(), 3u);
  EXPECT_EQ(first->parts[0].data, second->parts[0].data) << "the family head was copied";
  EXPECT_EQ(first->parts[1].data, second->parts[1].data) << "k1's unchanged lines were copied";
  EXPECT_NE(first->parts[2].data, second->parts[2].data);
  EXPECT_EQ(second->text_of(2), "x{target=\"/b\"} 3\n");
  EXPECT_EQ(first->text_of(2), "x{target=\"/b\"} 2\n") << "an earlier exposition changed under its reader";
  // Once the store moved on, the earlier exposition's pieces live on in what it keeps.
  s.remove("k1");
  s.remove("k2");
  EXPECT_EQ(first->join(), "# HELP x X.\n# TYPE x gauge\nx{target=\"/a\"} 1\nx{target=\"/b\"} 2\n");
}

// One publish renders all its families' lines into one record: the exposition's pieces of one key point
// into the same allocation. The exposition keeps the family names (and with them the heads) and the
// store's grave (what the store lets go of from then on), not each record.
TEST(Store, OneBatchIsOneTextWhateverItsFamilies) {
  metrics::Store s;
  metrics::Batch a;
  a.gauge("a_bytes", "A.", {{"target", "/a"}}, 1);
  a.gauge("b_bytes", "B.", {{"target", "/a"}}, 2);
  a.gauge("c_bytes", "C.", {{"target", "/a"}}, 3);
  s.publish("k", a);
  auto e = s.exposition();
  ASSERT_EQ(e->parts.size(), 6u);  // three heads, three lines
  EXPECT_EQ(e->parts[3].data, e->parts[1].data + e->parts[1].held) << "b's lines are not right after a's";
  EXPECT_EQ(e->parts[5].data, e->parts[3].data + e->parts[3].held);
  EXPECT_EQ(e->owners.size(), 2u);  // the family names (with their heads) and the grave
}

TEST(Store, ExpositionIsExactAndEscaped) {
  metrics::Batch b;
  b.gauge("g", "Help with \\ and\nnewline.", {{"target", "/srv/a \"b\"\\c\nd"}, {"fs", "ext4"}}, 0.25);
  b.counter("c_total", "C.", {}, 3);
  b.gauge("inf", "I.", {}, std::numeric_limits<double>::infinity());
  metrics::Store s;
  s.publish("k", b);
  EXPECT_EQ(s.text(),
            "# HELP c_total C.\n# TYPE c_total counter\nc_total 3\n"
            "# HELP g Help with \\\\ and\\nnewline.\n# TYPE g gauge\n"
            // Quotes and backslashes are escaped; a control character (the newline) is replaced by a
            // blank by clean_label_value before it reaches the store.
            "g{fs=\"ext4\",target=\"/srv/a \\\"b\\\"\\\\c d\"} 0.25\n"
            "# HELP inf I.\n# TYPE inf gauge\ninf +Inf\n");
}

TEST(Store, ATypeClashKeepsTheFirstType) {
  metrics::Store s;
  metrics::Batch a, b;
  a.gauge("m", "M.", {{"k", "a"}}, 1);
  b.counter("m", "M.", {{"k", "b"}}, 2);
  s.publish("a", a);
  s.publish("b", b);
  EXPECT_EQ(s.text(), "# HELP m M.\n# TYPE m gauge\nm{k=\"a\"} 1\n");
  s.remove("a");  // the family is gone with its last key; b's clash was dropped, not kept aside
  EXPECT_EQ(s.text(), "");
}

// A batch made of parts publishes the same exposition as the same samples added one by one; a part
// whose version is unchanged keeps its text without being built again, a new version replaces it,
// and a family spread over the batch's own samples and several parts stays one family.
TEST(Store, PartsGiveTheSameExpositionAndAreBuiltOncePerVersion) {
  int builds = 0;
  auto stack = [&](const std::string& id, std::uint64_t version, double count) {
    return metrics::Batch::Part{id, version, [&builds, id, count](metrics::Batch& p) {
                                  ++builds;
                                  p.histogram("fsaudit_fsync_latency_seconds", "Latency.", {{"stack", id}},
                                              {0.001, 0.01}, {1, 2, 3}, count);
                                  p.gauge("fsaudit_fsync_latency_window_samples", "Samples.", {{"stack", id}}, count);
                                }};
  };
  metrics::Batch with_parts;
  with_parts.gauge("fsaudit_latency_samplers", "Samplers.", {}, 2);
  with_parts.include(stack("a", 1, 1));
  with_parts.include(stack("b", 1, 2));
  metrics::Batch flat;
  flat.gauge("fsaudit_latency_samplers", "Samplers.", {}, 2);
  stack("a", 1, 1).build(flat);
  stack("b", 1, 2).build(flat);

  metrics::Store s1, s2;
  s1.publish("latency", with_parts);
  s2.publish("latency", flat);
  EXPECT_EQ(s1.text(), s2.text());
  EXPECT_EQ(with_parts.value("fsaudit_fsync_latency_window_samples", {{"stack", "b"}}), 2);
  EXPECT_EQ(metrics::serialize(with_parts), metrics::serialize(flat));

  builds = 0;
  metrics::Batch again;  // b unchanged, a at a new version
  again.gauge("fsaudit_latency_samplers", "Samplers.", {}, 2);
  again.include(stack("a", 2, 7));
  again.include(stack("b", 1, 2));
  s1.publish("latency", again);
  EXPECT_EQ(builds, 1);
  auto text = s1.text();
  EXPECT_EQ(fsaudit::testing::scrape_value(text, "fsaudit_fsync_latency_window_samples", {{"stack", "a"}}), 7);
  EXPECT_EQ(fsaudit::testing::scrape_value(text, "fsaudit_fsync_latency_window_samples", {{"stack", "b"}}), 2);
  EXPECT_EQ(fsaudit::testing::scrape_value(text, "fsaudit_fsync_latency_seconds_sum", {{"stack", "a"}}), 7);
  size_t helps = 0;
  for (size_t p = 0; (p = text.find("# HELP fsaudit_fsync_latency_seconds ", p)) != std::string::npos; ++p) ++helps;
  EXPECT_EQ(helps, 1u);

  // A part left out is gone, its text too (a later publish with it builds it again); of one id
  // included twice the first counts.
  builds = 0;
  metrics::Batch fewer;
  fewer.include(stack("a", 2, 7));
  fewer.include(stack("a", 3, 9));
  s1.publish("latency", fewer);
  EXPECT_EQ(builds, 0);
  text = s1.text();
  EXPECT_EQ(fsaudit::testing::scrape_value(text, "fsaudit_fsync_latency_window_samples", {{"stack", "a"}}), 7);
  EXPECT_TRUE(std::isnan(fsaudit::testing::scrape_value(text, "fsaudit_fsync_latency_window_samples", {{"stack", "b"}})));
  EXPECT_TRUE(std::isnan(fsaudit::testing::scrape_value(text, "fsaudit_latency_samplers")));
  s1.publish("latency", again);
  EXPECT_EQ(builds, 1);  // b again
  EXPECT_EQ(s1.text(), [&] {
    metrics::Store fresh;
    fresh.publish("latency", again);
    return fresh.text();
  }());

  s1.remove("latency");
  EXPECT_EQ(s1.text(), "");
}

// Thousands of random publishes, removals and retains over keys that publish changing subsets of
// families: after every step the exposition equals one built from scratch out of what each live key
// last published (families in name order, HELP/TYPE once, keys in key order within a family).
TEST(Store, RandomPublishRemoveRetainMatchesAFreshBuild) {
  const std::vector<std::string> fams = {"a_total", "b_bytes", "c_seconds", "d_info", "e_ratio"};
  auto batch_for = [&](unsigned mask, int key, int step) {
    metrics::Batch b;
    for (std::size_t f = 0; f < fams.size(); ++f)
      if (mask & (1u << f))
        b.gauge(fams[f], "Help of " + fams[f] + ".", {{"k", std::to_string(key)}}, step * 10.0 + static_cast<double>(f));
    return b;
  };
  metrics::Store s;
  std::map<std::string, metrics::Batch> live;
  std::mt19937 rng(7);
  for (int step = 0; step < 3000; ++step) {
    const int key = static_cast<int>(rng() % 40);
    const std::string k = "probe\x1f/target/with/a/long/common/prefix/" + std::to_string(key);
    const unsigned op = rng() % 10;
    if (op < 8) {
      auto b = batch_for(rng() % 32, key, step);
      s.publish(k, b);
      live[k] = b;
    } else if (op == 8) {
      s.remove(k);
      live.erase(k);
    } else {
      std::vector<std::string> keep;
      for (const auto& [lk, b] : live)
        if (rng() % 4) keep.push_back(lk);
      s.retain(keep);
      std::map<std::string, metrics::Batch> kept;
      for (const auto& lk : keep) kept[lk] = live[lk];
      live = std::move(kept);
    }
    // The reference: each family's head once, then that family's lines of every key in key order.
    std::string want;
    for (const auto& f : fams) {
      std::string lines;
      for (const auto& [lk, b] : live) {
        auto text = metrics::serialize(b);
        std::istringstream in(text);
        for (std::string line; std::getline(in, line);)
          if (line.rfind(f + "{", 0) == 0) lines += line + "\n";
      }
      if (!lines.empty()) want += "# HELP " + f + " Help of " + f + ".\n# TYPE " + f + " gauge\n" + lines;
    }
    ASSERT_EQ(s.text(), want) << "after step " << step;
  }
}

// Expositions taken at random moments and held while the store goes on (a slow scraper, several at
// once): each reads back exactly as it was taken, however many of the texts it shows the store has
// replaced or dropped since, and in whatever order they are let go of.
TEST(Store, HeldExpositionsStayAsTheyWereWhateverTheStoreLetsGoOf) {
  metrics::Store s;
  std::mt19937 rng(11);
  std::deque<std::pair<std::shared_ptr<const TextPieces>, std::string>> held;
  for (int step = 0; step < 2000; ++step) {
    const std::string k = "capacity\x1f/srv/" + std::to_string(rng() % 30);
    const unsigned op = rng() % 10;
    if (op < 7) {
      metrics::Batch b;
      b.gauge("size_bytes", "Size.", {{"target", k.substr(9)}}, step);
      if (rng() % 2) b.gauge("free_bytes", "Free.", {{"target", k.substr(9)}}, step + 1);
      s.publish(k, b);
    } else if (op == 7) {
      s.remove(k);
    } else if (op == 8) {
      s.retain({});
    } else {
      auto e = s.exposition();
      held.emplace_back(e, e->join());
    }
    if (held.size() > 6) held.erase(held.begin() + static_cast<long>(rng() % held.size()));
    for (const auto& [e, text] : held) ASSERT_EQ(e->join(), text) << "after step " << step;
  }
  ASSERT_GT(held.size(), 0u);
}

// A batch that carries only the parts that changed (Batch::parts_delta) leaves the others as they
// were, text and status items alike; a whole batch drops those it leaves out; remove and retain take a
// key's parts with it. Random steps over two keys against a model of what each key's parts are, checked
// against a store that got each key's parts in one whole batch.
TEST(Store, ADeltaOfPartsKeepsTheRestAndAWholeBatchDropsThem) {
  struct Kept {
    std::uint64_t version;
    double value;
  };
  auto part = [](const std::string& id, std::uint64_t version, double value, int* builds) {
    return metrics::Batch::Part{id, version, [=](metrics::Batch& p) {
                                  if (builds) ++*builds;
                                  p.gauge("fsaudit_fsync_latency_window_samples", "Samples.", {{"stack", id}}, value);
                                  if (value > 0) {
                                    auto& f = p.status.filesystems.emplace_back();
                                    f.target = id;
                                    f.fsync_p99_seconds = value;
                                  }
                                }};
  };
  const std::vector<std::string> keys = {"latency\x1fhost", "other\x1fhost"};
  std::map<std::string, std::map<std::string, Kept>> model;
  metrics::Store s;
  std::mt19937 rng(5);
  for (int step = 0; step < 1500; ++step) {
    const auto& key = keys[rng() % keys.size()];
    auto& kept = model[key];
    const unsigned op = rng() % 10;
    int builds = 0, changed = 0;
    if (op < 7) {
      metrics::Batch b;
      b.parts_delta = op < 5;
      b.gauge("fsaudit_latency_samplers", "Samplers.", {{"key", key.substr(0, 5)}}, step);
      std::map<std::string, Kept> next = b.parts_delta ? kept : std::map<std::string, Kept>{};
      for (int i = 0; i < 12; ++i) {
        if (rng() % 3) continue;
        const std::string id = "s" + std::to_string(i) + "-" + key.substr(0, 5);
        auto was = kept.find(id);
        const bool same = was != kept.end() && rng() % 2;
        Kept k = same ? was->second : Kept{static_cast<std::uint64_t>(step), static_cast<double>(rng() % 3)};
        if (!same) ++changed;
        b.include(part(id, k.version, k.value, &builds));
        next[id] = k;
      }
      s.publish(key, b);
      kept = std::move(next);
      ASSERT_EQ(builds, changed) << "only new versions are built, at step " << step;
    } else if (op < 9) {
      s.remove(key);
      model.erase(key);
    } else {
      std::vector<std::string> keep;
      if (rng() % 2) keep.push_back(key);
      else model.erase(key);
      for (const auto& k : keys)
        if (k != key && model.count(k)) keep.push_back(k);
      s.retain(keep);
    }
    // The reference: the parts each key holds, each in one whole batch (own series checked elsewhere).
    metrics::Store fresh;
    std::set<std::string> want_status;
    for (const auto& [k, parts] : model) {
      metrics::Batch whole;
      for (const auto& [id, p] : parts) {
        whole.include(part(id, p.version, p.value, nullptr));
        if (p.value > 0) want_status.insert(id);
      }
      fresh.publish(k, whole);
    }
    auto lines_of = [](const std::string& text) {
      std::string out;
      std::istringstream in(text);
      for (std::string line; std::getline(in, line);)
        if (line.rfind("fsaudit_fsync_latency_window_samples{", 0) == 0) out += line + "\n";
      return out;
    };
    ASSERT_EQ(lines_of(s.text()), lines_of(fresh.text())) << "after step " << step;
    std::set<std::string> got_status;
    for (const auto& [k, items] : s.status())
      for (const auto& f : items.filesystems) got_status.insert(f.target);
    ASSERT_EQ(got_status, want_status) << "after step " << step;
  }
}
