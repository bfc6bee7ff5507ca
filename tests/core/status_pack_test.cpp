#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <memory>
#include <random>

#include "daemon/metrics/status_pack.hpp"
#include "daemon/metrics/store.hpp"

using namespace fsaudit::metrics;

namespace {

// Every field set, from `rng`: a field that pack() forgets comes back empty and the round trip differs.
struct Filler {
  std::mt19937_64 rng;
  std::string str() {
    std::string s(rng() % 40, 'x');
    for (auto& c : s) c = static_cast<char>(rng() % 256);  // any byte: labels, paths, NULs
    return s;
  }
  double num() {
    switch (rng() % 5) {
      case 0: return std::numeric_limits<double>::infinity();
      case 1: return -0.5;
      case 2: return 0;
      default: return static_cast<double>(rng()) / 7.0;
    }
  }
  bool flag() { return rng() % 2; }
  template <class T>
  std::optional<T> maybe(T v) {
    return rng() % 4 ? std::optional<T>(v) : std::nullopt;
  }
  ScrubFacts scrub() {
    ScrubFacts s;
    s.age_seconds = maybe(num()), s.running = flag(), s.paused = flag(), s.progress_ratio = maybe(num());
    for (int i = rng() % 4; i > 0; --i) s.errors[str()] = num();
    s.last_result = str(), s.mode = str(), s.decision = str();
    return s;
  }
  FsFacts fs() {
    FsFacts f;
    f.target = str(), f.pool = str(), f.device = str(), f.fs = str(), f.source = str();
    f.mounted = maybe(flag()), f.readonly = maybe(flag()), f.data_checksums = maybe(flag());
    f.size_bytes = maybe(num()), f.avail_bytes = maybe(num()), f.files = maybe(num()), f.files_free = maybe(num());
    f.fsync_p50_seconds = maybe(num()), f.fsync_p99_seconds = maybe(num()), f.fsync_p999_seconds = maybe(num());
    if (rng() % 2) f.scrub = scrub();
    if (rng() % 2) {
      RedundancyFacts r;
      r.margin = maybe(static_cast<int>(rng() % 5) - 1), r.designed = maybe(static_cast<int>(rng() % 4));
      for (int i = rng() % 3; i > 0; --i) r.members_down.push_back(str());
      f.redundancy = r;
    }
    f.members_at_risk = maybe(num());
    for (int i = rng() % 3; i > 0; --i) f.setup_findings.push_back({str(), str()});
    f.detection_covered = maybe(flag()), f.covering_canary = str();
    for (int i = rng() % 3; i > 0; --i) f.problems.push_back({static_cast<Severity>(rng() % 3), str(), str()});
    return f;
  }
  StatusItems items() {
    StatusItems it;
    for (int i = rng() % 3; i > 0; --i) it.filesystems.push_back(fs());
    for (int i = rng() % 3; i > 0; --i) it.kernel_errors.push_back({str(), str(), num(), num()});
    for (int i = rng() % 3; i > 0; --i)
      it.canaries.push_back({str(), str(), str(), str(), str(), str(), maybe(flag()), maybe(num()), str(), str()});
    for (int i = rng() % 3; i > 0; --i) it.runs.push_back({str(), str(), str(), flag(), flag(), flag()});
    it.version = str();
    it.config_reload_ok = maybe(flag());
    return it;
  }
};

}  // namespace

// The fillers above set every field there is. A struct that grows a field changes its size: list the
// field in status_pack.cpp's fields() and in Filler, then the size here.
#if defined(__x86_64__) && defined(__GLIBCXX__)
#define FSAUDIT_SIZE(T, n) static_assert(sizeof(T) == n, #T " changed: list its new field in status_pack.cpp's fields() and in Filler")
FSAUDIT_SIZE(FsFacts, 400);
FSAUDIT_SIZE(ScrubFacts, 184);
FSAUDIT_SIZE(RedundancyFacts, 40);
FSAUDIT_SIZE(CanaryFacts, 280);
FSAUDIT_SIZE(RunFacts, 104);
FSAUDIT_SIZE(KernelErrorFacts, 80);
FSAUDIT_SIZE(Problem, 72);
FSAUDIT_SIZE(SetupFindingFacts, 64);
FSAUDIT_SIZE(StatusItems, 136);
#undef FSAUDIT_SIZE
#endif

TEST(StatusPack, EveryFieldSurvivesTheRoundTrip) {
  Filler f{std::mt19937_64(33)};
  for (int i = 0; i < 2000; ++i) {
    auto it = f.items();
    auto packed = pack(it);
    EXPECT_EQ(unpack(packed), it) << "item " << i;
    // With a known text that some fields are (a target) and others only start with, or are empty.
    const std::string known = it.filesystems.empty() ? f.str() : it.filesystems[0].target;
    if (!it.runs.empty()) it.runs[0].target = known, it.runs[0].reason = known + "x";
    auto with = pack(it, known);
    EXPECT_EQ(unpack(with, known), it) << "item " << i << " with a known text";
  }
  EXPECT_EQ(pack(StatusItems{}), "");
  EXPECT_EQ(unpack(""), StatusItems{});
}

TEST(StatusPack, CutOrForeignTextNeverReadsPastItsEnd) {
  // Under ASan this is the check: a length or count that points past the end is refused.
  Filler f{std::mt19937_64(7)};
  for (int i = 0; i < 200; ++i) {
    auto packed = pack(f.items());
    for (std::size_t n = 0; n < packed.size(); ++n) (void)unpack(std::string_view(packed).substr(0, n));
    std::string noise = f.str() + f.str();
    (void)unpack(noise);
    std::string big = "\x01\xff\xff\xff\xff\xff\xff\xff\xff\x01";  // a count of 2^63
    (void)unpack(big);
  }
}

TEST(StatusPack, ACapacityItemTakesWhatItSaysNotTheStructsSize) {
  // The common item: a target's size and free space. Packed, it is its name and two numbers.
  StatusItems it;
  auto& f = it.fs("/srv/customers/c-10293/volumes/data");
  f.size_bytes = 1e12, f.avail_bytes = 4e11;
  auto packed = pack(it);
  EXPECT_LT(packed.size(), f.target.size() + 2 * sizeof(double) + 40);
  EXPECT_LT(packed.size(), sizeof(FsFacts) / 4);
  EXPECT_EQ(unpack(packed), it);
  // Kept under a key that names the target: the name is not kept twice.
  auto under_key = pack(it, f.target);
  EXPECT_LT(under_key.size(), 2 * sizeof(double) + 40);
  EXPECT_EQ(unpack(under_key, f.target), it);
}

TEST(StatusPack, TheStoreGivesBackWhatWasPublishedByKeyAndVisitsEachKeyOnce) {
  Filler f{std::mt19937_64(11)};
  Store store;
  std::map<std::string, StatusItems> want;
  for (int i = 0; i < 50; ++i) {
    Batch b;
    b.status = f.items();
    const std::string target = "/t" + std::to_string(i % 30);
    if (!b.status.filesystems.empty()) b.status.filesystems[0].target = target;  // named by the key too
    auto key = "probe\x1f" + target;
    store.publish(key, b);
    if (b.status.empty()) want.erase(key);
    else want[key] = b.status;
  }
  EXPECT_EQ(store.status(), want);
  std::map<std::string, StatusItems> seen;
  store.visit_status([&](const std::string& key, const StatusItems& items) {
    EXPECT_TRUE(seen.emplace(key, items).second) << key;
  });
  EXPECT_EQ(seen, want);
}

// A host-wide probe's items, one per target, saying the same sentences of each (the setup audit's
// findings): kept compressed, a fraction of their text, and read back exactly. Cut anywhere, they
// never read past their end.
TEST(StatusPack, AHostWideProbesManyItemsAreCompressedAndReadBackExactly) {
  StatusItems it;
  std::size_t text = 0;
  for (int i = 0; i < 3000; ++i) {
    auto& f = it.fs("/srv/customers/c-" + std::to_string(i) + "/data");
    f.data_checksums = false;
    f.detection_covered = false;
    f.setup_findings.push_back({"no_data_checksums", "warning"});
    f.problems.push_back({Severity::warning, "ext4 keeps no checksums of data: silent corruption is handed back as good data",
                          "https://example.org/runbooks/no-data-checksums"});
    text += f.target.size() + f.problems.back().words.size() + f.problems.back().runbook.size() + 24;
  }
  auto packed = pack(it);
  EXPECT_EQ(unpack(packed), it);
  EXPECT_LT(packed.size() * 8, text) << packed.size() << " bytes for " << text << " of text";
  for (std::size_t n = 0; n < packed.size(); n += 1 + n / 50) {
    std::unique_ptr<char[]> own(new char[n + 1]);  // its own size on the heap: ASan sees a read past it
    std::memcpy(own.get(), packed.data(), n);
    (void)unpack(std::string_view(own.get(), n));
  }
}
