#include "probes/kernel_log/kmsg.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fsaudit::kernel_log {

KmsgReader::~KmsgReader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<void> KmsgReader::open(const std::filesystem::path& path, std::optional<std::uint64_t> resume_after,
                              bool from_end) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0)
    return err("cannot open " + path.string() + ": " + std::strerror(errno) +
               (errno == EACCES || errno == EPERM ? " (needs root or CAP_SYSLOG; or set kernel_log.source: journal)"
                                                  : ""));
  buf_.assign(16384, '\0');
  if (resume_after) {
    seq_.reset(resume_after, std::nullopt);
  } else if (from_end) {
    // lseek(SEEK_END) would start at the end without telling which sequence number that is, so a
    // restart before the first counted record could not resume there. Reading the buffer through
    // (at most its size, once per first start) names the position.
    std::optional<std::uint64_t> newest;
    for (;;) {
      auto rec = read_record();
      if (!rec) return err(rec.error());
      if (!*rec) break;
      newest = (*rec)->seq;
    }
    seq_.reset(newest, std::nullopt);
  } else {
    seq_.reset(std::nullopt, 0);  // the whole boot: anything before the oldest buffered record was lost
  }
  return {};
}

Result<std::optional<KmsgRecord>> KmsgReader::read_record() {
  for (int guard = 0; guard < 1'000'000; ++guard) {
    ssize_t n = ::read(fd_, buf_.data(), buf_.size());
    if (n < 0) {
      if (errno == EAGAIN) return std::optional<KmsgRecord>{};
      if (errno == EINTR) continue;
      if (errno == EPIPE) continue;  // overwritten before we read it; the seq gap counts how many
      if (errno == EINVAL) continue;  // a record longer than our buffer (cannot happen with 16 KiB)
      return err(std::string("read /dev/kmsg: ") + std::strerror(errno));
    }
    if (n == 0) return std::optional<KmsgRecord>{};
    auto rec = parse_kmsg_record(std::string_view(buf_.data(), static_cast<std::size_t>(n)));
    if (!rec) continue;  // not a record we understand; skip it rather than stop
    return rec;
  }
  return std::optional<KmsgRecord>{};
}

Result<std::optional<KmsgRecord>> KmsgReader::next() {
  if (fd_ < 0) return err("/dev/kmsg is not open");
  for (int guard = 0; guard < 1'000'000; ++guard) {
    auto rec = read_record();
    if (!rec || !*rec) return rec;
    if (seq_.accept((*rec)->seq)) return rec;  // else already counted before a restart
  }
  return std::optional<KmsgRecord>{};
}

}  // namespace fsaudit::kernel_log
