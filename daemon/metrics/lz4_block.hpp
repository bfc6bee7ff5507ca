#pragma once
// The store's one rule for compressing what it keeps (issue 33): text of kCompressFrom bytes or more
// (a host-wide probe's lines or status items, one per filesystem or device) is kept as LZ4 when that
// saves at least a quarter. line_pack.hpp and status_pack.hpp both follow it.
#include <cstddef>
#include <string>
#include <string_view>

namespace fsaudit::metrics::lz4_block {

constexpr std::size_t kCompressFrom = 2048;
inline bool saves_enough(std::size_t compressed, std::size_t text) { return compressed * 4 < text * 3; }
// Appends `text` as one LZ4 block; returns the block's size.
std::size_t append(std::string& out, std::string_view text);
// Decompresses `block` into `dst`, at most `capacity` bytes; the bytes written, or -1 for a block that is
// not one append() made (cut, damaged, or larger than `capacity`).
int read(std::string_view block, char* dst, std::size_t capacity);

}  // namespace fsaudit::metrics::lz4_block
