#include "daemon/metrics/lz4_block.hpp"

#include <lz4.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace fsaudit::metrics::lz4_block {

std::size_t append(std::string& out, std::string_view text) {
  if (text.size() > static_cast<std::size_t>(LZ4_MAX_INPUT_SIZE)) throw std::length_error("LZ4 input too large");
  const int n = static_cast<int>(text.size());
  const int bound = LZ4_compressBound(n);
  const std::size_t at = out.size();
  out.resize(at + static_cast<std::size_t>(bound));
  const int c = LZ4_compress_default(text.data(), out.data() + at, n, bound);
  out.resize(at + static_cast<std::size_t>(c > 0 ? c : 0));
  return out.size() - at;
}

int read(std::string_view block, char* dst, std::size_t capacity) {
  if (block.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) return -1;
  const int cap = static_cast<int>(std::min<std::size_t>(capacity, static_cast<std::size_t>(std::numeric_limits<int>::max())));
  return LZ4_decompress_safe(block.data(), dst, static_cast<int>(block.size()), cap);
}

}  // namespace fsaudit::metrics::lz4_block
