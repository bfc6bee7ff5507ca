#include <gtest/gtest.h>

#include <cmath>

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
