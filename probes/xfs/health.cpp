#include "probes/xfs/health.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstring>

namespace fsaudit::xfs {

namespace {

// The UAPI structures of fs/xfs/libxfs/xfs_fs.h (not installed with xfsprogs); their sizes are part
// of the ioctl numbers, so a wrong layout fails with ENOTTY, never with garbage.
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

void put32(unsigned char*& p, std::uint32_t v) {
  std::memcpy(p, &v, sizeof v);
  p += sizeof v;
}

// In the helper: system calls only, the answer written in encode_geometry()'s layout.
int geometry_call(const char* path, void* out, std::size_t cap, std::size_t* n) {
  int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno;
  FsopGeom geo{};
  if (::ioctl(fd, kFsGeometry, &geo) != 0) {
    int e = errno;
    ::close(fd);
    return e;
  }
  if (geo.version != kGeomVersionV5) {  // no sick/checked fields before version 5
    ::close(fd);
    return ENOTTY;
  }
  const std::size_t need = 24 + static_cast<std::size_t>(geo.agcount) * 8;
  if (need > cap) {
    ::close(fd);
    return ERANGE;
  }
  auto* p = static_cast<unsigned char*>(out);
  put32(p, geo.flags);
  put32(p, geo.sick);
  put32(p, geo.checked);
  put32(p, geo.agcount);
  std::memcpy(p, &geo.rtblocks, sizeof geo.rtblocks);
  p += sizeof geo.rtblocks;
  for (std::uint32_t ag = 0; ag < geo.agcount; ++ag) {
    AgGeometry a{};
    a.ag_number = ag;
    // Reads the AG headers: on a shut-down filesystem this is where EIO comes from, as for spaceman.
    if (::ioctl(fd, kAgGeometry, &a) != 0) {
      int e = errno;
      ::close(fd);
      return e;
    }
    put32(p, a.ag_sick);
    put32(p, a.ag_checked);
  }
  ::close(fd);
  *n = need;
  return 0;
}

const capacity::HelperCallRegistration kGeometry{kGeometryCall, geometry_call};

}  // namespace

HealthRead read_health(capacity::StatfsHelpers& helpers, const std::string& mountpoint, const std::stop_token& stop,
                       const Clock& clock, SteadyTime deadline) {
  HealthRead out;
  auto r = helpers.call(kGeometryCall, mountpoint, stop, clock, deadline);
  if (!r) {
    out.error = "XFS health of " + mountpoint + ": " + r.error();
    return out;
  }
  if (r->err != 0) {
    out.err = r->err;
    out.error = "XFS_IOC_FSGEOMETRY/AG_GEOMETRY " + mountpoint + ": " + std::strerror(r->err);
    return out;
  }
  auto g = decode_geometry(r->data);
  if (!g) {
    out.error = "XFS health of " + mountpoint + ": the helper's answer is not a whole geometry";
    return out;
  }
  out.health = health_from_geometry(*g);
  return out;
}

}  // namespace fsaudit::xfs
