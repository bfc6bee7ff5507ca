// The smartctl --json parser on real outputs (tests/fixtures/smart, copied from the shared corpus
// with their sources), and on garbage, cut and hostile input.
#include <gtest/gtest.h>

#include "probes/disk/smart.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::disk {
namespace {

SmartReport parse(const std::string& file) {
  auto r = parse_smartctl_json(testing::fixture("smart/" + file));
  EXPECT_TRUE(r.ok()) << file << ": " << (r.ok() ? "" : r.error());
  return r.ok() ? *r : SmartReport{};
}

TEST(SmartExitStatus, EveryBitHasAMeaning) {
  for (int bit = 0; bit < 8; ++bit) {
    auto b = decode_exit_status(1 << bit);
    EXPECT_EQ(b.failures.size() + b.findings.size(), 1u) << "bit " << bit;
    EXPECT_EQ(b.failures.size(), bit < 3 ? 1u : 0u) << "bit " << bit;
  }
  auto b = decode_exit_status(216);  // 8 + 16 + 64 + 128
  EXPECT_EQ(b.findings, (std::vector<std::string>{"failing", "prefail_below_threshold", "error_log_has_errors",
                                                  "self_test_log_has_errors"}));
  EXPECT_FALSE(decode_exit_status(256).failures.empty());
  EXPECT_TRUE(decode_exit_status(0).failures.empty() && decode_exit_status(0).findings.empty());
}

TEST(SmartParse, HealthyAtaDisk) {
  auto r = parse("smartctl-7.0-ata-hdd-wd140edfz-healthy-all-zero.json");
  EXPECT_EQ(r.state, SmartState::ok);
  EXPECT_EQ(r.protocol, "ATA");
  EXPECT_EQ(r.passed, true);
  EXPECT_EQ(r.reallocated_sectors, 0u);
  EXPECT_EQ(r.pending_sectors, 0u);
  EXPECT_EQ(r.offline_uncorrectable, 0u);
  EXPECT_EQ(r.udma_crc_errors, 0u);
  EXPECT_EQ(r.last_self_test_passed, true);
  EXPECT_TRUE(r.temperature_celsius.has_value());
  EXPECT_TRUE(r.power_on_hours.has_value());
}

TEST(SmartParse, FailingAtaDiskIsDataNotAProbeFailure) {
  auto r = parse("smartctl-7.1-ata-hdd-usbjmicron-failed-reallocated-1975-now-pending-8.json");
  EXPECT_EQ(r.state, SmartState::ok) << r.reason;
  EXPECT_EQ(r.passed, false);
  EXPECT_EQ(r.exit_status, 216);
  EXPECT_EQ(r.bits.findings.front(), "failing");
  EXPECT_EQ(r.reallocated_sectors, 1975u);
  EXPECT_EQ(r.pending_sectors, 8u);
  auto r2 = parse("smartctl-7.3-ata-hdd-usbjmicron-failed-reallocated-535-now-pending-1-uncorrect-84.json");
  EXPECT_EQ(r2.reallocated_sectors, 535u);
  EXPECT_EQ(r2.pending_sectors, 1u);
  EXPECT_EQ(r2.last_self_test_passed, false);
  EXPECT_EQ(r2.last_self_test, "Completed: read failure");
  EXPECT_EQ(parse("smartctl-7.3-ata-hdd-udma-crc-error-count-3118119.json").udma_crc_errors, 3118119u);
}

TEST(SmartParse, Nvme) {
  auto w = parse("smartctl-7.3-nvme-critical-warning-16-volatile-backup-failed-exit-8.json");
  EXPECT_EQ(w.state, SmartState::ok);
  EXPECT_EQ(w.critical_warning, 16u);
  EXPECT_EQ(w.passed, false);
  EXPECT_EQ(w.available_spare, 100);
  EXPECT_EQ(w.available_spare_threshold, 10);
  auto h = parse("smartctl-7.3-nvme-healthy-toshiba-kxg6-xall.json");
  EXPECT_EQ(h.critical_warning, 0u);
  EXPECT_EQ(h.media_errors, 0u);
  EXPECT_EQ(h.percentage_used, 3);
  EXPECT_EQ(h.protocol, "NVMe");
}

TEST(SmartParse, Scsi) {
  auto s = parse("smartctl-7.4-scsi-parallel-spi-grown-defects-260-write-uncorrected-535.json");
  EXPECT_EQ(s.grown_defects, 260u);
  EXPECT_EQ(s.uncorrected_read, 1u);
  EXPECT_EQ(s.uncorrected_write, 535u);
  EXPECT_EQ(s.power_on_hours, 102880);
  auto sas = parse("smartctl-7.4-scsi-sas-healthy-pending-defects-0-selftest-log.json");
  EXPECT_EQ(sas.grown_defects, 0u);
  EXPECT_EQ(sas.last_self_test_passed, true);
  EXPECT_EQ(sas.last_self_test, "Completed");
}

TEST(SmartParse, StandbyUnsupportedAndFailedCommands) {
  auto sb = parse("smartctl-7.5-ata-standby-nocheck-exit-2.json");
  EXPECT_EQ(sb.state, SmartState::standby);
  EXPECT_NE(sb.reason.find("STANDBY"), std::string::npos) << sb.reason;
  for (const char* f : {"smartctl-7.5-usb-unknown-bridge-exit-1.json", "smartctl-7.2-scsi-qemu-virtual-disk-no-smart-exit-4.json",
                        "smartctl-7.3-loop-device-unable-to-detect-exit-1.json"}) {
    auto u = parse(f);
    EXPECT_EQ(u.state, SmartState::unsupported) << f << ": " << u.reason;
  }
  auto denied = parse("smartctl-7.3-nvme-open-permission-denied-exit-2.json");
  EXPECT_EQ(denied.state, SmartState::failed);
  EXPECT_NE(denied.reason.find("bit 1"), std::string::npos) << denied.reason;
  EXPECT_NE(denied.reason.find("Permission denied"), std::string::npos) << denied.reason;
  // Bit 2 with the data there: the failure is reported, the data is still read.
  auto mr = parse("smartctl-7.1-ata-hdd-megaraid-reallocated-387-attribute-check-warning-exit-4.json");
  EXPECT_EQ(mr.state, SmartState::failed);
  EXPECT_NE(mr.reason.find("bit 2"), std::string::npos) << mr.reason;
  EXPECT_NE(mr.reason.find("Attribute check"), std::string::npos) << mr.reason;
  EXPECT_EQ(mr.reallocated_sectors, 387u);
}

TEST(SmartParse, GarbageCutAndForeignJsonAreErrorsThatSayWhy) {
  auto text = testing::fixture("smart/smartctl-7.3-nvme-healthy-toshiba-kxg6-xall.json");
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, text.size() / 3, text.size() / 2, text.size() - 3}) {
    auto r = parse_smartctl_json(text.substr(0, cut));
    ASSERT_FALSE(r.ok()) << "cut at " << cut;
    EXPECT_NE(r.error().find(cut == 0 ? "nothing" : "not JSON"), std::string::npos) << r.error();
  }
  EXPECT_FALSE(parse_smartctl_json("\x01\xff garbage").ok());
  EXPECT_FALSE(parse_smartctl_json("[1,2,3]").ok());
  EXPECT_FALSE(parse_smartctl_json("{\"smartctl\": {}}").ok());  // no exit status
  // Wrong types where numbers belong: absent values, never garbage.
  auto r = parse_smartctl_json(R"({"smartctl":{"exit_status":0},"device":{"protocol":"NVMe"},"smart_status":{"passed":true},
    "nvme_smart_health_information_log":{"critical_warning":"x","media_errors":-4,"available_spare":[1]},
    "ata_smart_attributes":{"table":[{"id":5,"raw":{"value":"lots"}},7]}})");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_FALSE(r->critical_warning || r->media_errors || r->available_spare || r->reallocated_sectors);
  // The process exit status counts when the JSON has none... and the JSON's wins when both are there.
  auto p = parse_smartctl_json(R"({"smartctl":{"version":[7,3]},"smart_status":{"passed":true}})", 64);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->bits.findings, std::vector<std::string>{"error_log_has_errors"});
  auto sc = parse_smartctl_json("{\"smartctl\":{\"exit_status\":0}}");
  ASSERT_TRUE(sc.ok());
  EXPECT_EQ(sc->state, SmartState::failed);  // nothing usable said
}

}  // namespace
}  // namespace fsaudit::disk
