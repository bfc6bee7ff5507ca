#pragma once
// What one cycle changed on the canary: the bytes it overwrote on one member. Its own header so the
// pure marker parser (marker.hpp) needs nothing of the cycle (config, runner).
#include <cstdint>
#include <string>

namespace fsaudit::canary {

struct Injection {
  std::string device;          // resolved member path
  std::uint64_t offset = 0;    // byte offset of the corrupted bytes
  std::string before_hex, after_hex;
  std::uint64_t block_index = 0;
  std::uint64_t block_offset = 0;  // where the located copy of the block starts
  std::uint64_t block_size = 0;
};

}  // namespace fsaudit::canary
