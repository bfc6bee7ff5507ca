// Captures real zfs-fuse output on this machine into a directory (used to make tests/fixtures/zfs/*).
// Not a test: run by hand, as root:  build-zfs/tests/zfs/zfs_fuse_capture OUTDIR [VDEV_MiB DATA_MiB]
// Everything runs under the machine-wide testing::ZfsFuse guard; the pool is created from two
// 96 MiB files in a temp dir and destroyed at the end.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit::testing;

namespace {
void save(const std::string& dir, const std::string& name, const std::vector<std::string>& argv) {
  auto c = run(argv, 60);
  std::string cmdline;
  for (auto& a : argv) cmdline += (cmdline.empty() ? "" : " ") + a;
  std::ofstream f(dir + "/" + name);
  f << "# source: captured on this machine (zfs-fuse 0.7.0-25+b1, Debian) with `" << cmdline
    << "` by tests/zfs/zfs_fuse_capture.cpp; exit " << c.exit_code << "\n";
  f << c.out;
  if (!c.err.empty()) std::ofstream(dir + "/" + name + ".stderr") << c.err;
  std::cout << "== " << name << " (exit " << c.exit_code << ")\n" << c.out << c.err;
}
// Overwrites 1 MiB at several offsets in the middle of a file vdev (not the 4 MiB labels).
void corrupt(const std::string& path, std::uint64_t size) {
  int fd = ::open(path.c_str(), O_WRONLY);
  std::string junk(1 << 20, '\xA5');
  for (std::uint64_t off = 8 << 20; off + (1 << 20) < size - (8 << 20); off += 4 << 20)
    if (::pwrite(fd, junk.data(), junk.size(), static_cast<off_t>(off)) < 0) perror("pwrite");
  ::fsync(fd);
  ::close(fd);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: zfs_fuse_capture OUTDIR [VDEV_MiB DATA_MiB]\n";
    return 2;
  }
  std::string out = argv[1];
  ZfsFuse zf;
  if (!zf.ok()) {
    std::cerr << "zfs-fuse: " << zf.error() << "\n";
    return 1;
  }
  TempDir tmp("fsaudit-zfs-capture");
  const std::uint64_t size = (argc > 2 ? std::stoull(argv[2]) : 96ull) << 20;
  const int data_mib = argc > 3 ? std::stoi(argv[3]) : 40;
  std::string a = (tmp / "vdev-a.img").string(), b = (tmp / "vdev-b.img").string();
  for (auto& p : {a, b}) must({"truncate", "-s", std::to_string(size), p});
  {
    ZfsPool pool("fsauditcap", {"mirror", a, b});
    if (!pool.ok()) {
      std::cerr << "create: " << pool.error() << "\n";
      return 1;
    }
    save(out, "zfs-fuse-status-healthy-mirror-never-scrubbed.txt", {"zpool", "status", "fsauditcap"});
    save(out, "zfs-fuse-list-H-o-healthy.txt",
         {"zpool", "list", "-H", "-o", "name,size,allocated,free,capacity,health"});
    save(out, "zfs-fuse-list-default.txt", {"zpool", "list"});
    save(out, "zfs-fuse-status-p-rejected.txt", {"zpool", "status", "-p"});
    save(out, "zfs-fuse-list-Hp-rejected.txt",
         {"zpool", "list", "-Hp", "-o", "name,size,allocated,free,fragmentation,capacity,dedupratio,health"});
    save(out, "zfs-fuse-list-H-fragmentation-rejected.txt",
         {"zpool", "list", "-H", "-o", "name,size,allocated,free,fragmentation,capacity,dedupratio,health"});
    save(out, "zfs-fuse-status-j-rejected.txt", {"zpool", "status", "-jp"});
    // Note: do not try recordsize=512 to slow the scrub down: zfs-fuse 0.7.0 aborts on writes
    // (zfs_operations.c:1435 assertion uio_resid == 0) and leaves a stale FUSE mount.
    // Data: random bytes.
    must({"dd", "if=/dev/urandom", "of=/fsauditcap/data.bin", "bs=1M", "count=" + std::to_string(data_mib), "conv=fsync"});
    save(out, "zfs-fuse-list-H-o-with-data.txt",
         {"zpool", "list", "-H", "-o", "name,size,allocated,free,capacity,health"});
    must({"zpool", "scrub", "fsauditcap"});
    for (int i = 0; i < 2000; ++i) {
      auto st = run({"zpool", "status", "fsauditcap"});
      if (st.out.find("in progress") != std::string::npos) {
        save(out, "zfs-fuse-status-scrub-in-progress.txt", {"zpool", "status", "fsauditcap"});
        break;
      }
      if (st.out.find("completed") != std::string::npos) break;
    }
    for (int i = 0; i < 300; ++i) {
      if (run({"zpool", "status", "fsauditcap"}).out.find("in progress") == std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    save(out, "zfs-fuse-status-scrub-completed-clean.txt", {"zpool", "status", "fsauditcap"});
    must({"zpool", "export", "fsauditcap"});
    corrupt(b, size);
    must({"zpool", "import", "-d", tmp.path().string(), "fsauditcap"});
    must({"zpool", "scrub", "fsauditcap"});
    for (int i = 0; i < 300; ++i) {
      if (run({"zpool", "status", "fsauditcap"}).out.find("in progress") == std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    save(out, "zfs-fuse-status-after-corruption-scrub-cksum.txt", {"zpool", "status", "-v", "fsauditcap"});
    std::string c = (tmp / "single.img").string();
    must({"truncate", "-s", "80M", c});
    ZfsPool second("fsauditcap2", {c});
    save(out, "zfs-fuse-status-two-pools.txt", {"zpool", "status"});
    save(out, "zfs-fuse-status-x-one-unhealthy.txt", {"zpool", "status", "-x"});
    save(out, "zfs-fuse-list-H-o-two-pools.txt",
         {"zpool", "list", "-H", "-o", "name,size,allocated,free,capacity,health"});
  }
  return 0;
}
