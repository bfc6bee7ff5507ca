#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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
  auto first = s.snapshot();
  auto again = s.snapshot();
  EXPECT_EQ(first.get(), again.get()) << "a scrape without a change serialised again";
  EXPECT_EQ(s.builds(), 1u);
  metrics::Batch b;
  b.gauge("x", "X.", {{"target", "/b"}}, 2);
  s.publish("k2", b);
  auto third = s.snapshot();
  EXPECT_NE(first.get(), third.get());
  EXPECT_EQ(s.builds(), 2u);
  // The old snapshot is immutable: a scrape in progress keeps a consistent text.
  EXPECT_EQ(first->find("/b"), std::string::npos);
  EXPECT_NE(third->find("x{target=\"/b\"} 2\n"), std::string::npos) << *third;
  s.remove("nothing-there");
  EXPECT_EQ(s.snapshot().get(), third.get()) << "a no-op remove invalidated the text";
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
