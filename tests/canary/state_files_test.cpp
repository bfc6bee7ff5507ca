// The canary state files root reads (the in-flight marker, the identity record): their pure parsers
// on the text their writers produce and on bad text (truncated, oversized, not UTF-8, wrong types,
// numbers out of range), and the reader's refusal of symlinks, FIFOs and oversized files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/core/files.hpp"
#include "probes/canary/identity.hpp"
#include "probes/canary/marker.hpp"
#include "probes/canary/state_json.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::canary {
namespace {

using nlohmann::json;
using testing::TempDir;

// One field of a good document (at a JSON pointer) replaced by a bad value; the parser must refuse
// it with an error that names `names`.
struct BadField {
  const char* pointer;
  json value;
  const char* names;
};
template <class Parse>
void expect_each_refused(const json& good, const std::vector<BadField>& cases, Parse parse) {
  for (const auto& c : cases) {
    auto j = good;
    j[json::json_pointer(c.pointer)] = c.value;
    auto r = parse(j.dump());
    ASSERT_FALSE(r) << c.pointer << " = " << c.value.dump();
    EXPECT_NE(r.error().find(c.names), std::string::npos) << c.pointer << ": " << r.error();
  }
}

Marker a_marker() {
  Marker m;
  m.phase = "injected";
  m.started = 1764000000.25;
  m.nonce = 0xfedcba9876543210ULL;
  m.counters_before = 3;
  m.counters_before_devices = {{"/dev/loop3", 2}, {"/dev/loop4", 1}};
  m.pid = 4242;
  m.boot_id = "0f0e0d0c-0b0a-0908-0706-050403020100";
  m.injection = Injection{"/dev/loop3", 1048576 + 512, std::string(32, 'a'), std::string(32, 'b'), 7, 1048576, 4096};
  return m;
}

TEST(CanaryMarker, WhatTheCycleWritesReadsBack) {
  auto m = a_marker();
  auto back = parse_marker(marker_text(m));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->phase, m.phase);
  EXPECT_EQ(back->started, m.started);
  EXPECT_EQ(back->nonce, m.nonce);
  EXPECT_EQ(back->counters_before, m.counters_before);
  EXPECT_EQ(back->counters_before_devices, m.counters_before_devices);
  EXPECT_EQ(back->pid, m.pid);
  EXPECT_EQ(back->boot_id, m.boot_id);
  ASSERT_TRUE(back->injection);
  EXPECT_EQ(back->injection->device, "/dev/loop3");
  EXPECT_EQ(back->injection->offset, m.injection->offset);
  EXPECT_EQ(back->injection->before_hex, m.injection->before_hex);
  EXPECT_EQ(back->injection->after_hex, m.injection->after_hex);
  EXPECT_EQ(back->injection->block_index, 7u);
  EXPECT_EQ(back->injection->block_offset, 1048576u);
  EXPECT_EQ(back->injection->block_size, 4096u);
  m.injection.reset();
  back = parse_marker(marker_text(m));
  ASSERT_TRUE(back) << back.error();
  EXPECT_FALSE(back->injection);
}

// Every prefix of a real marker is refused: a marker cut by a full disk is never half-believed.
TEST(CanaryMarker, TruncatedTextIsRefused) {
  auto text = marker_text(a_marker());
  for (std::size_t n = 0; n + 1 < text.size(); ++n) {
    // The closing brace is the last non-space byte: any shorter prefix is not a JSON object.
    if (text.find_first_not_of(" \n", n) == std::string::npos) break;
    EXPECT_FALSE(parse_marker(text.substr(0, n))) << n;
  }
}

// One field of a real marker replaced: each is refused, naming the field.
TEST(CanaryMarker, WrongTypesAndNumbersOutOfRangeAreRefusedWithTheField) {
  const std::vector<BadField> cases = {
      {"/phase", 5, "phase"},
      {"/phase", "", "phase"},
      {"/phase", nullptr, "phase"},
      {"/nonce", "5", "nonce"},
      {"/nonce", -1, "nonce"},
      {"/nonce", 1e30, "nonce"},
      {"/nonce", 0.5, "nonce"},
      {"/started", "yesterday", "started"},
      {"/counters_before", -7, "counters_before"},
      {"/counters_before_devices", json::array({1}), "counters_before_devices"},
      {"/counters_before_devices/~1dev~1loop3", -2, "counters_before_devices"},
      {"/counters_before_devices/~1dev~1loop3", "2", "counters_before_devices"},
      {"/pid", 1099511627776LL, "pid"},
      {"/pid", -1, "pid"},
      {"/boot_id", json::object(), "boot_id"},
      {"/injection", "everything", "injection"},
      {"/injection/device", 3, "device"},
      {"/injection/offset", -512, "offset"},
      {"/injection/offset", 1.8446744073709552e19, "offset"},
      {"/injection/block_size", "4096", "block_size"},
      {"/injection/before", std::string(9000, 'a'), "before"},
      {"/injection/after", std::string("ab\0cd", 5), "after"},
  };
  auto good = json::parse(marker_text(a_marker()));
  expect_each_refused(good, cases, [](const std::string& t) { return parse_marker(t); });
  for (const char* field : {"device", "offset", "before", "after", "block_index", "block_offset", "block_size"}) {
    auto j = good;
    j["injection"].erase(field);
    auto r = parse_marker(j.dump());
    ASSERT_FALSE(r) << "without injection." << field;
    EXPECT_NE(r.error().find(std::string(field) + "\" is missing"), std::string::npos) << r.error();
  }
  auto j = good;
  j.erase("phase");
  EXPECT_FALSE(parse_marker(j.dump()));
}

TEST(CanaryMarker, NotAnObjectNotUtf8OrOversizedIsRefused) {
  for (std::string bad : {"", "[]", "\"phase\"", "42", "null", "{\"phase\": \"injected\"} trailing",
                          "{\"phase\": \"inj\xff\xfe\"}", "{\"phase\": \"injected\", \"boot_id\": \"\xc3\x28\"}"}) {
    auto r = parse_marker(bad);
    EXPECT_FALSE(r) << bad;
  }
  auto j = json::parse(marker_text(a_marker()));
  j["padding"] = std::string(state_json::kMaxStateFileBytes, ' ');
  auto r = parse_marker(j.dump());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("more than"), std::string::npos) << r.error();
}

// Keys a later version may add are ignored; the known ones still have to be right.
TEST(CanaryMarker, UnknownKeysAreIgnored) {
  auto j = json::parse(marker_text(a_marker()));
  j["written_by"] = "fsaudit 9";
  auto r = parse_marker(j.dump());
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->nonce, a_marker().nonce);
}

DeviceIdentity a_device(const std::string& path) {
  DeviceIdentity d;
  d.path = path;
  d.resolved = path;
  d.kind = DeviceKind::loop;
  d.size = 64 << 20;
  d.major = 7;
  d.minor = 3;
  d.backing_file = "/srv/lab/a.img";
  d.by_id = {"/dev/disk/by-id/x"};
  return d;
}

// The record as save_record writes it (the writer makes the text, not the test).
std::string saved_record_text(const TempDir& d, const CanaryRecord& r) {
  auto s = save_record(d.path(), r);
  EXPECT_TRUE(s) << s.error();
  return read_file(canary_state_dir(d.path(), r.name) / "identity.json").value_or("");
}

CanaryRecord a_record() {
  CanaryRecord r;
  r.name = "mirror";
  r.signature_id = "9b1f";
  r.pattern_key = 0xffffffffffffffffULL;
  r.created = 1764000000;
  r.devices = {a_device("/dev/loop3"), a_device("/dev/loop4")};
  return r;
}

TEST(CanaryRecordText, WhatInitWritesReadsBack) {
  TempDir d("canary-record");
  auto rec = a_record();
  auto back = parse_record(saved_record_text(d, rec), "mirror");
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->signature_id, rec.signature_id);
  EXPECT_EQ(back->pattern_key, rec.pattern_key);
  ASSERT_EQ(back->devices.size(), 2u);
  EXPECT_EQ(back->devices[1].resolved, "/dev/loop4");
  EXPECT_EQ(back->devices[1].kind, DeviceKind::loop);
  EXPECT_EQ(back->devices[1].backing_file, "/srv/lab/a.img");
  EXPECT_EQ(back->devices[1].by_id, rec.devices[1].by_id);
  EXPECT_EQ(back->devices[1].minor, 3u);
  EXPECT_TRUE(identity_mismatch(back->devices[0], rec.devices[0]).ok());
  auto lr = load_record(d.path(), "mirror");
  ASSERT_TRUE(lr) << lr.error();
  EXPECT_EQ(lr->pattern_key, rec.pattern_key);
}

TEST(CanaryRecordText, BadTextIsRefusedWithTheField) {
  TempDir d("canary-record");
  auto text = saved_record_text(d, a_record());
  for (std::size_t n = 0; n + 1 < text.size(); n += 7) EXPECT_FALSE(parse_record(text.substr(0, n), "mirror")) << n;
  EXPECT_FALSE(parse_record(text, "tank-canary"));  // another canary's record
  const std::vector<BadField> cases = {
      {"/name", 1, "name"},
      {"/signature_id", "", "signature_id"},
      {"/pattern_key", -1, "pattern_key"},
      {"/pattern_key", 3.5e25, "pattern_key"},
      {"/pattern_key", "123", "pattern_key"},
      {"/created", "today", "created"},
      {"/devices", json::array(), "devices"},
      {"/devices", json::object(), "devices"},
      {"/devices/0", "/dev/loop3", "device 1"},
      {"/devices/1/kind", "disk", "kind"},
      {"/devices/1/kind", "", "kind"},
      {"/devices/1/size", -4096, "size"},
      {"/devices/1/major", 4294967296LL, "major"},
      {"/devices/1/minor", 1.5, "minor"},
      {"/devices/0/resolved", "", "resolved"},
      {"/devices/0/resolved", json::array({"/dev/loop3"}), "resolved"},
      {"/devices/0/by_id", "/dev/disk/by-id/x", "by_id"},
      {"/devices/0/by_id/0", 7, "by_id"},
      {"/devices/0/inode", true, "inode"},
      {"/devices/0/backing_file", std::string(9000, 'f'), "backing_file"},
  };
  auto good = json::parse(text);
  expect_each_refused(good, cases, [](const std::string& t) { return parse_record(t, "mirror"); });
  for (const char* field : {"path", "resolved", "kind", "size", "serial", "wwid", "by_id", "backing_file", "inode", "fs_dev"}) {
    auto j = good;
    j["devices"][0].erase(field);
    auto r = parse_record(j.dump(), "mirror");
    ASSERT_FALSE(r) << "without " << field;
    EXPECT_NE(r.error().find(std::string(field) + "\" is missing"), std::string::npos) << r.error();
  }
  auto many = good;
  for (int i = 0; i < 64; ++i) many["devices"].push_back(good["devices"][0]);
  EXPECT_FALSE(parse_record(many.dump(), "mirror"));
  EXPECT_FALSE(parse_record("{\"name\": \"mirror\xff\"}", "mirror"));
  EXPECT_FALSE(parse_record(std::string(state_json::kMaxStateFileBytes + 1, ' '), "mirror"));
}

// The reader: a symlink is not followed (even to a good record), a FIFO does not block root, an
// oversized file is not read; each is refused with the path.
TEST(CanaryStateFile, SymlinksFifosAndOversizedFilesAreRefused) {
  TempDir d("canary-record");
  auto text = saved_record_text(d, a_record());
  auto dir = canary_state_dir(d.path(), "mirror");
  auto file = dir / "identity.json";
  auto elsewhere = d.path() / "real.json";
  std::filesystem::rename(file, elsewhere);
  std::filesystem::create_symlink(elsewhere, file);
  auto r = load_record(d.path(), "mirror");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("symlink"), std::string::npos) << r.error();
  std::filesystem::remove(file);
  ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
  r = load_record(d.path(), "mirror");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("not a regular file"), std::string::npos) << r.error();
  std::filesystem::remove(file);
  testing::write_text(file, text + std::string(state_json::kMaxStateFileBytes, ' '));
  r = load_record(d.path(), "mirror");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("more than"), std::string::npos) << r.error();
  std::filesystem::remove(file);
  auto none = state_json::read_state_file(file);
  ASSERT_TRUE(none) << none.error();
  EXPECT_FALSE(*none);
  r = load_record(d.path(), "mirror");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("never initialised"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace fsaudit::canary
