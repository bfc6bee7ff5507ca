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
    std::string error;
    KmsgRecord rec;
    Status s;
    while ((s = read_record(&rec, &error)) == Status::record) newest = rec.seq;
    if (s == Status::error) return err(error);
    seq_.reset(newest, std::nullopt);
  } else {
    seq_.reset(std::nullopt, 0);  // the whole boot: anything before the oldest buffered record was lost
  }
  return {};
}

KmsgReader::Status KmsgReader::read_record(KmsgRecord* out, std::string* error) {
  for (int guard = 0; guard < 1'000'000; ++guard) {
    ssize_t n = ::read(fd_, buf_.data(), buf_.size());
    if (n < 0) {
      if (errno == EAGAIN) return Status::empty;
      if (errno == EINTR) continue;
      if (errno == EPIPE) continue;  // overwritten before we read it; the seq gap counts how many
      if (errno == EINVAL) continue;  // a record longer than our buffer (cannot happen with 16 KiB)
      *error = std::string("read /dev/kmsg: ") + std::strerror(errno);
      return Status::error;
    }
    if (n == 0) return Status::empty;
    auto rec = parse_kmsg_record(std::string_view(buf_.data(), static_cast<std::size_t>(n)));
    if (!rec) continue;  // not a record we understand; skip it rather than stop
    *out = std::move(*rec);
    return Status::record;
  }
  return Status::empty;
}

KmsgReader::Status KmsgReader::next(KmsgRecord* out, std::string* error) {
  if (fd_ < 0) {
    *error = "/dev/kmsg is not open";
    return Status::error;
  }
  for (int guard = 0; guard < 1'000'000; ++guard) {
    Status s = read_record(out, error);
    if (s != Status::record) return s;
    if (seq_.accept(out->seq)) return Status::record;  // else already counted before a restart
  }
  return Status::empty;
}

}  // namespace fsaudit::kernel_log
