#include "probes/canary/pattern.hpp"

#include <sys/random.h>

#include <chrono>
#include <cstring>

namespace fsaudit::canary {

namespace {
std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

void make_block(const PatternKey& k, std::uint64_t index, std::size_t block_size, unsigned char* out) {
  // A zero-sized block has no bytes (and std::vector<>(0).data() may be null).
  if (block_size == 0) return;
  std::uint64_t hdr[3] = {kMagic, k.nonce, index};
  std::memcpy(out, hdr, std::min(kHeaderBytes, block_size));
  std::uint64_t s = k.key ^ (k.nonce * 0x9e3779b97f4a7c15ull) ^ (index * 0xc2b2ae3d27d4eb4full);
  for (std::size_t off = kHeaderBytes; off < block_size; off += 8) {
    std::uint64_t v = splitmix(s);
    std::memcpy(out + off, &v, std::min<std::size_t>(8, block_size - off));
  }
}

std::vector<unsigned char> make_block(const PatternKey& k, std::uint64_t index, std::size_t block_size) {
  std::vector<unsigned char> v(block_size);
  make_block(k, index, block_size, v.data());
  return v;
}

std::optional<std::uint64_t> header_index(const unsigned char* p, std::uint64_t nonce) {
  std::uint64_t hdr[3];
  std::memcpy(hdr, p, kHeaderBytes);
  if (hdr[0] != kMagic || hdr[1] != nonce) return std::nullopt;
  return hdr[2];
}

std::uint64_t random_u64() {
  std::uint64_t v = 0;
  if (::getrandom(&v, sizeof v, 0) != sizeof v)
    v = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) * 0x9e3779b97f4a7c15ull;
  return v;
}

std::string to_hex(const unsigned char* p, std::size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  s.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    s.push_back(d[p[i] >> 4]);
    s.push_back(d[p[i] & 15]);
  }
  return s;
}
std::string to_hex(const std::vector<unsigned char>& v) { return to_hex(v.data(), v.size()); }

std::optional<std::vector<unsigned char>> from_hex(const std::string& s) {
  if (s.size() % 2) return std::nullopt;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::vector<unsigned char> v;
  for (std::size_t i = 0; i < s.size(); i += 2) {
    int a = nib(s[i]), b = nib(s[i + 1]);
    if (a < 0 || b < 0) return std::nullopt;
    v.push_back(static_cast<unsigned char>(a * 16 + b));
  }
  return v;
}

}  // namespace fsaudit::canary
