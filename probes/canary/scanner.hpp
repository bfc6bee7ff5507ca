#pragma once
// Raw pattern scanner: reads a whole device (or file) with O_DIRECT through io_uring with a deep
// queue and reports every 512-byte-aligned position that starts with a canary block header of the
// given cycle nonce. Read-only: opens with O_RDONLY.
#include <cstdint>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit::canary {

struct ScanOptions {
  std::size_t chunk_bytes = 1 << 20;  // per read; multiple of 4096
  unsigned queue_depth = 32;          // reads in flight
  std::size_t align = 512;            // positions checked for a header
  std::uint64_t limit_bytes = 0;      // 0 = whole device
  std::stop_token stop;
};

struct ScanHit {
  std::uint64_t index = 0;   // canary block index from the header
  std::uint64_t offset = 0;  // byte offset on the device
};

struct ScanResult {
  std::string device;
  std::vector<ScanHit> hits;
  std::uint64_t bytes = 0;
  double seconds = 0;
  double bytes_per_second() const { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0; }
};

// Size in bytes of a block device (BLKGETSIZE64) or regular file.
Result<std::uint64_t> device_size(const std::string& path);

Result<ScanResult> scan_device(const std::string& path, std::uint64_t nonce, const ScanOptions& opt = {});

// O_DIRECT read of [offset, offset+len) (any alignment; widened internally to 4096).
Result<std::vector<unsigned char>> read_direct(const std::string& path, std::uint64_t offset, std::size_t len);

}  // namespace fsaudit::canary
