#include "probes/xfs/health.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

namespace fsaudit::xfs {

namespace {

// The UAPI structures of linux/fs/xfs/libxfs/xfs_fs.h (not installed with xfsprogs here); their
// sizes are part of the ioctl numbers, so a wrong layout fails with ENOTTY, never with garbage.
struct FsopGeom {  // struct xfs_fsop_geom, version 5
  std::uint32_t blocksize, rtextsize, agblocks, agcount, logblocks, sectsize, inodesize, imaxpct;
  std::uint64_t datablocks, rtblocks, rtextents, logstart;
  unsigned char uuid[16];
  std::uint32_t sunit, swidth;
  std::int32_t version;
  std::uint32_t flags, logsectsize, rtsectsize, dirblocksize, logsunit;
  std::uint32_t sick, checked;
  std::uint64_t reserved[17];
};
static_assert(sizeof(FsopGeom) == 256);
struct AgGeometry {  // struct xfs_ag_geometry
  std::uint32_t ag_number, ag_length, ag_freeblks, ag_icount, ag_ifree, ag_sick, ag_checked, ag_flags;
  std::uint64_t ag_reserved[12];
};
static_assert(sizeof(AgGeometry) == 128);
constexpr unsigned long kFsGeometry = _IOR('X', 126, FsopGeom);
constexpr unsigned long kAgGeometry = _IOWR('X', 61, AgGeometry);
constexpr std::int32_t kGeomVersionV5 = 5;

constexpr std::uint32_t kFlagFinobt = 1u << 17, kFlagRmapbt = 1u << 19, kFlagReflink = 1u << 20;

struct FlagName {
  std::uint32_t mask;
  const char* what;
  std::uint32_t needs_flag = 0;  // shown only when the filesystem has this feature
  bool needs_rt = false;
};
constexpr FlagName kFsFlags[] = {
    {1u << 0, "summary counters"}, {1u << 1, "user quota"},
    {1u << 2, "group quota"},      {1u << 3, "project quota"},
    {1u << 4, "realtime bitmap", 0, true}, {1u << 5, "realtime summary", 0, true},
};
constexpr FlagName kAgFlags[] = {
    {1u << 0, "superblock"},
    {1u << 1, "AGF header"},
    {1u << 2, "AGFL header"},
    {1u << 3, "AGI header"},
    {1u << 4, "free space by block btree"},
    {1u << 5, "free space by length btree"},
    {1u << 6, "inode btree"},
    {1u << 7, "free inode btree", kFlagFinobt},
    {1u << 8, "reverse mappings btree", kFlagRmapbt},
    {1u << 9, "reference count btree", kFlagReflink},
    {1u << 10, "overall inode state"},
};

// As spaceman's report_sick(): a structure is listed once checked or found sick.
void report(Health& h, const Geometry& g, const char* scope, const std::string& index, const auto& names,
            std::uint32_t sick, std::uint32_t checked) {
  for (const auto& f : names) {
    if (f.needs_flag && !(g.flags & f.needs_flag)) continue;
    if (f.needs_rt && g.rtblocks == 0) continue;
    bool bad = sick & f.mask;
    if (!bad && !(checked & f.mask)) continue;
    h.items.push_back({scope, index, f.what, !bad});
  }
}

}  // namespace

Health health_from_geometry(const Geometry& g) {
  Health h;
  report(h, g, "filesystem", "", kFsFlags, g.sick, g.checked);
  for (std::size_t i = 0; i < g.ags.size(); ++i)
    report(h, g, "ag", std::to_string(i), kAgFlags, g.ags[i].sick, g.ags[i].checked);
  h.collected = !h.items.empty();
  return h;
}

HealthRead read_health(const std::filesystem::path& mountpoint) {
  HealthRead out;
  auto fail = [&](int e, const std::string& what) {
    out.err = e;
    out.error = what + " " + mountpoint.string() + ": " + std::strerror(e);
    return out;
  };
  int fd = ::open(mountpoint.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return fail(errno, "open");
  FsopGeom geo{};
  if (::ioctl(fd, kFsGeometry, &geo) != 0) {
    int e = errno;
    ::close(fd);
    return fail(e, "XFS_IOC_FSGEOMETRY");
  }
  if (geo.version != kGeomVersionV5) {  // no sick/checked fields before version 5
    ::close(fd);
    return fail(ENOTTY, "XFS_IOC_FSGEOMETRY version " + std::to_string(geo.version) + " on");
  }
  Geometry g;
  g.flags = geo.flags;
  g.rtblocks = geo.rtblocks;
  g.sick = geo.sick;
  g.checked = geo.checked;
  for (std::uint32_t ag = 0; ag < geo.agcount; ++ag) {
    AgGeometry a{};
    a.ag_number = ag;
    // Reads the AG headers: on a shut-down filesystem this is where EIO comes from, as for spaceman.
    if (::ioctl(fd, kAgGeometry, &a) != 0) {
      int e = errno;
      ::close(fd);
      return fail(e, "XFS_IOC_AG_GEOMETRY AG " + std::to_string(ag) + " of");
    }
    g.ags.push_back({a.ag_sick, a.ag_checked});
  }
  ::close(fd);
  out.health = health_from_geometry(g);
  return out;
}

HealthRead read_health_within(const std::filesystem::path& mountpoint, std::chrono::milliseconds timeout,
                              const std::function<HealthRead(const std::filesystem::path&)>& read) {
  struct Pending {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    HealthRead result;
  };
  static std::mutex registry_mu;
  static std::map<std::string, std::shared_ptr<Pending>> blocked;  // mount point -> read not yet returned
  HealthRead out;
  const std::string key = mountpoint.string();
  auto pending = std::make_shared<Pending>();
  {
    std::lock_guard l(registry_mu);
    auto it = blocked.find(key);
    if (it != blocked.end()) {
      std::lock_guard pl(it->second->mu);
      if (!it->second->done) {
        out.err = EBUSY;
        out.error = "an earlier XFS health read of " + key + " has not returned (hung filesystem?)";
        return out;
      }
    }
    blocked[key] = pending;
  }
  try {
    std::thread([pending, read, mountpoint] {
      auto r = read(mountpoint);
      std::lock_guard l(pending->mu);
      pending->result = std::move(r);
      pending->done = true;
      pending->cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    std::lock_guard l(registry_mu);
    blocked.erase(key);
    out.err = EAGAIN;
    out.error = std::string("cannot start a thread for the XFS health read: ") + e.what();
    return out;
  }
  std::unique_lock l(pending->mu);
  if (!pending->cv.wait_for(l, timeout, [&] { return pending->done; })) {
    out.err = ETIMEDOUT;
    out.error = "XFS health read of " + key + " did not return within " + std::to_string(timeout.count()) +
                " ms (hung filesystem?)";
    return out;  // stays in `blocked` until it returns
  }
  out = std::move(pending->result);
  l.unlock();
  std::lock_guard rl(registry_mu);
  if (auto it = blocked.find(key); it != blocked.end() && it->second == pending) blocked.erase(it);
  return out;
}

}  // namespace fsaudit::xfs
