#pragma once
// The canary file's content: N blocks, each unique and recognisable on a raw device.
// Block layout: 8-byte magic "FSAUDCNY", 8-byte cycle nonce, 8-byte block index, then a keyed
// pseudo-random stream (splitmix64 over key ^ nonce ^ index) that compression cannot shrink.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fsaudit::canary {

inline constexpr std::uint64_t kMagic = 0x594e434455415346ull;  // "FSAUDCNY" little-endian
inline constexpr std::size_t kHeaderBytes = 24;

struct PatternKey {
  std::uint64_t key = 0;    // secret per canary (kept in the state dir)
  std::uint64_t nonce = 0;  // fresh per cycle
};

// The block sizes a cycle writes and injects into (a filesystem block: 512 bytes to 64 KiB, a multiple
// of 512); a recorded injection with any other size is not one of fsaudit's.
inline constexpr std::size_t kMinBlockSize = 512, kMaxBlockSize = 64 << 10;
inline bool valid_block_size(std::uint64_t bs) { return bs >= kMinBlockSize && bs <= kMaxBlockSize && bs % 512 == 0; }

// Fills `out` (block_size bytes) with block `index`. A block_size below the header writes only
// block_size bytes of it (callers check valid_block_size(); this never writes past `out`).
void make_block(const PatternKey& k, std::uint64_t index, std::size_t block_size, unsigned char* out);
std::vector<unsigned char> make_block(const PatternKey& k, std::uint64_t index, std::size_t block_size);

// If `p` starts with the header of a block of this cycle, its index.
std::optional<std::uint64_t> header_index(const unsigned char* p, std::uint64_t nonce);

std::uint64_t random_u64();
std::string to_hex(const unsigned char* p, std::size_t n);
std::string to_hex(const std::vector<unsigned char>& v);
std::optional<std::vector<unsigned char>> from_hex(const std::string& s);

}  // namespace fsaudit::canary
