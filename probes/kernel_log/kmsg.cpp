#include "probes/kernel_log/kmsg.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/core/strings.hpp"

namespace fsaudit::kernel_log {

namespace {
int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::optional<KmsgRecord> parse_kmsg_record(std::string_view rec) {
  auto semi = rec.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  auto fields = split(rec.substr(0, semi), ',');
  if (fields.size() < 4) return std::nullopt;
  auto prio = parse_u64(fields[0]);
  auto seq = parse_u64(fields[1]);
  auto ts = parse_u64(fields[2]);
  if (!prio || !seq || !ts || fields[3].empty()) return std::nullopt;
  KmsgRecord r;
  r.level = static_cast<int>(*prio & 7);
  r.facility = static_cast<int>(*prio >> 3);
  r.seq = *seq;
  r.ts_usec = *ts;
  r.flags = fields[3][0];
  std::string_view msg = rec.substr(semi + 1);
  auto nl = msg.find('\n');  // dictionary lines (" SUBSYSTEM=...") follow the first newline
  if (nl != std::string_view::npos) msg = msg.substr(0, nl);
  r.message.reserve(msg.size());
  for (std::size_t i = 0; i < msg.size(); ++i) {
    if (msg[i] == '\\' && i + 3 < msg.size() && msg[i + 1] == 'x' && hexval(msg[i + 2]) >= 0 &&
        hexval(msg[i + 3]) >= 0) {
      r.message.push_back(static_cast<char>(hexval(msg[i + 2]) * 16 + hexval(msg[i + 3])));
      i += 3;
    } else {
      r.message.push_back(msg[i]);
    }
  }
  return r;
}

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
    if (::lseek(fd_, 0, SEEK_END) < 0) return err("lseek(SEEK_END) on " + path.string() + ": " + std::strerror(errno));
    seq_.reset(std::nullopt, std::nullopt);
  } else {
    seq_.reset(std::nullopt, 0);  // the whole boot: anything before the oldest buffered record was lost
  }
  return {};
}

KmsgReader::Status KmsgReader::next(KmsgRecord* out, std::string* error) {
  if (fd_ < 0) {
    *error = "/dev/kmsg is not open";
    return Status::error;
  }
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
    if (!seq_.accept(rec->seq)) continue;  // already counted before a restart
    *out = std::move(*rec);
    return Status::record;
  }
  return Status::empty;
}

}  // namespace fsaudit::kernel_log
