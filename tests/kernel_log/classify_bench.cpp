// Throughput of the kernel log classifier (and the kmsg record parser) on a synthetic mix: every line
// of the kernel-* fixtures and of this machine's captures (storage errors, ~1 in 20 lines) mixed with
// ordinary kernel chatter that must be rejected cheaply. Not a test; run by hand:
//   build-kernel_log/tests/kernel_log/kernel_log_classify_bench
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon/core/strings.hpp"
#include "probes/kernel_log/classify.hpp"
#include "probes/kernel_log/kmsg_record.hpp"

namespace {

std::vector<std::string> mix() {
  std::vector<std::string> errors;
  auto add_file = [&](const std::filesystem::path& p) {
    std::ifstream in(p);
    std::string l;
    while (std::getline(in, l))
      if (l.rfind("# source:", 0) != 0) errors.emplace_back(fsaudit::kernel_log::strip_log_prefix(l));
  };
  for (const auto& e : std::filesystem::directory_iterator(std::string(FSAUDIT_FIXTURES_DIR) + "/written/kernel_log"))
    add_file(e.path());
  add_file(std::string(FSAUDIT_TEST_DATA_DIR) + "/kernel_log/btrfs-raid1-loop-csum-scrub-kernel-6.18.txt");
  const char* chatter[] = {
      "usb 1-1: new high-speed USB device number 2 using xhci_hcd",
      "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
      "audit: type=1400 audit(1700000000.123:45): apparmor=\"STATUS\" operation=\"profile_load\"",
      "loop3: detected capacity change from 0 to 262144",
      "EXT4-fs (sda1): mounted filesystem 1c2d3e4f-aaaa-bbbb-cccc-1234567890ab r/w with ordered data mode.",
      "BTRFS info (device loop1): first mount of filesystem aa2bb02b-ba70-4a50-a70d-351bb659512f",
      "XFS (sdb): Mounting V5 Filesystem 8f3e2a1b-1111-2222-3333-444455556666",
      "sd 0:0:0:0: [sda] 976773168 512-byte logical blocks: (500 GB/466 GiB)",
      "perf: interrupt took too long (2503 > 2500), lowering kernel.perf_event_max_sample_rate to 79750",
      "r8169 0000:03:00.0 eth0: Link is Up - 1Gbps/Full - flow control rx/tx",
      "md: data-check of RAID array md0",
      "traps: python3[1234] general protection fault ip:7f0000000000 sp:7ffd00000000 error:0 in libc.so.6",
      "TCP: request_sock_TCP: Possible SYN flooding on port 80. Sending cookies.",
      "cgroup: fork rejected by pids controller in /user.slice/user-1000.slice",
  };
  std::vector<std::string> out;
  std::size_t e = 0;
  for (std::size_t i = 0; i < 20000; ++i) {
    if (i % 20 == 0) out.push_back(errors[e++ % errors.size()]);
    else out.emplace_back(chatter[i % (sizeof chatter / sizeof *chatter)]);
  }
  return out;
}

void BM_Classify(benchmark::State& state) {
  auto lines = mix();
  std::size_t hits = 0;
  for (auto _ : state) {
    for (const auto& l : lines)
      if (auto ev = fsaudit::kernel_log::classify(l)) ++hits;
    benchmark::DoNotOptimize(hits);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * lines.size()));
  state.counters["matched_per_pass"] = static_cast<double>(hits) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_Classify);

void BM_KmsgParseAndClassify(benchmark::State& state) {
  auto lines = mix();
  std::vector<std::string> recs;
  std::uint64_t seq = 1000;
  for (const auto& l : lines) recs.push_back("6," + std::to_string(seq++) + ",1453911196,-;" + l + "\n");
  std::size_t hits = 0;
  for (auto _ : state) {
    for (const auto& r : recs)
      if (auto k = fsaudit::kernel_log::parse_kmsg_record(r))
        if (fsaudit::kernel_log::classify(k->message)) ++hits;
    benchmark::DoNotOptimize(hits);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * recs.size()));
}
BENCHMARK(BM_KmsgParseAndClassify);

}  // namespace

BENCHMARK_MAIN();
