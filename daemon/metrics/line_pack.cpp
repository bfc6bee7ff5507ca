#include "daemon/metrics/line_pack.hpp"

#include "daemon/metrics/lz4_block.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace fsaudit::metrics::line_pack {
namespace {

// In a piece's lines: bytes 1..3 stand for a word, kLiteral says the next byte is itself, and
// kNoName at the start of a line says the line does not start with the family's name. Every other
// byte is itself; a 1..5 of the text is written as kLiteral and the byte.
constexpr char kLiteral = 4;
constexpr char kNoName = 5;
constexpr bool special(unsigned char c) { return c >= 1 && c <= 5; }
// Where a run of plain bytes stops when unpacking: a code or a line's end.
constexpr auto kStop = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) t[static_cast<std::size_t>(c)] = special(static_cast<unsigned char>(c)) || c == '\n';
  return t;
}();

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>(0x80 | (v & 0x7f));
    v >>= 7;
  }
  out += static_cast<char>(v);
}

// Reads a varint at `p`; false at the end of [p, end) or on one longer than a uint64.
bool get_varint(const char*& p, const char* end, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    auto b = static_cast<unsigned char>(*p++);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// A piece's name id is written shifted left by one; the low bit says its lines are LZ4 blocks. Same
// varint length either way, so add() sets the bit after writing the header.
constexpr std::uint64_t kCompressed = 1;

// The lines of a large piece as LZ4 blocks: each a varint of its text's length, one of its compressed
// length, then those bytes. A block is at most kBlock of text, cut after a newline (or longer, for one
// line that is).
constexpr std::size_t kBlock = 64 * 1024;

void put_blocks(std::string& out, std::string_view lines) {
  std::string buf;
  std::size_t i = 0;
  while (i < lines.size()) {
    std::size_t n = std::min(kBlock, lines.size() - i);
    if (i + n < lines.size()) {
      auto nl = lines.rfind('\n', i + n - 1);
      if (nl != std::string_view::npos && nl >= i) n = nl + 1 - i;
      else if (auto next = lines.find('\n', i + n); next != std::string_view::npos) n = next + 1 - i;
      else n = lines.size() - i;
    }
    buf.clear();
    const std::size_t c = lz4_block::append(buf, lines.substr(i, n));
    put_varint(out, n);
    put_varint(out, c);
    out += buf;
    i += n;
  }
}

// Appends the text of the blocks in [p, end), at most `size` bytes (a block that would pass it ends
// the text there: Content-Length was sent from `size`).
void unpack_blocks(const char* p, const char* end, std::size_t size, std::string& out) {
  const std::size_t before = out.size();
  out.resize(before + size);
  std::size_t done = 0;
  while (p < end && done < size) {
    std::uint64_t n = 0, c = 0;
    if (!get_varint(p, end, n) || !get_varint(p, end, c) || c > static_cast<std::uint64_t>(end - p) || n > size - done) break;
    const int got = lz4_block::read(std::string_view(p, c), out.data() + before + done, n);
    if (got < 0) break;
    done += static_cast<std::size_t>(got);
    p += c;
  }
  out.resize(before + done);
}

}  // namespace

void start(std::string& blob, const Words& words) {
  put_varint(blob, words.count);
  for (std::size_t i = 0; i < words.count; ++i) {
    put_varint(blob, words.word[i].size());
    blob += words.word[i];
  }
}

std::size_t add(std::string& blob, const Words& words, std::uint32_t name_id, std::string_view name,
                std::string_view lines) {
  const std::size_t at = blob.size();
  put_varint(blob, lines.size());
  const std::size_t id_at = blob.size();
  put_varint(blob, static_cast<std::uint64_t>(name_id) << 1);
  put_varint(blob, at);  // back to the blob's words
  const std::size_t body = blob.size();
  // Many lines of one key (a host-wide probe's per-device or per-target series: 4 MB of the 10,000
  // bench's setup lines in one key) name a different target or device on each line, which the words
  // cannot say; LZ4 finds what repeats across lines. Unpacking it is faster than the words' too.
  if (lines.size() >= lz4_block::kCompressFrom) {
    std::string blocks;
    put_blocks(blocks, lines);
    if (lz4_block::saves_enough(blocks.size(), lines.size())) {  // else the words' way
      blob[id_at] = static_cast<char>(blob[id_at] | kCompressed);
      blob += blocks;
      return at;
    }
  }
  blob.reserve(body + lines.size());
  bool line_start = true;
  std::size_t i = 0;
  while (i < lines.size()) {
    if (line_start) {
      line_start = false;
      // Left out only when something follows it: a piece must not end at a line's start, where the
      // name would have to be put back without a byte saying so.
      if (i + name.size() < lines.size() && lines.compare(i, name.size(), name) == 0) i += name.size();
      else blob += kNoName;
      continue;
    }
    const char c = lines[i];
    bool matched = false;
    for (std::size_t w = 0; w < words.count && !matched; ++w) {
      const auto& word = words.word[w];
      if (!word.empty() && word[0] == c && lines.compare(i, word.size(), word) == 0) {
        blob += static_cast<char>(1 + w);
        i += word.size();
        matched = true;
      }
    }
    if (matched) continue;
    if (special(static_cast<unsigned char>(c))) blob += kLiteral;
    blob += c;
    ++i;
    if (c == '\n') line_start = true;
  }
  return at;
}

std::size_t text_size(std::string_view piece) {
  const char* p = piece.data();
  std::uint64_t v = 0;
  return get_varint(p, piece.data() + piece.size(), v) ? v : 0;
}

const char* words_of(std::string_view piece) {
  const char* p = piece.data();
  const char* const end = p + piece.size();
  std::uint64_t size = 0, name_id = 0, back = 0;
  if (!get_varint(p, end, size) || !get_varint(p, end, name_id) || !get_varint(p, end, back)) return nullptr;
  return piece.data() - back;
}

void unpack(std::string_view piece, NameOf name_of, const void* names, std::string& out) {
  const char* p = piece.data();
  const char* const end = p + piece.size();
  std::uint64_t size = 0, name_id = 0, back = 0;
  if (!get_varint(p, end, size) || !get_varint(p, end, name_id) || !get_varint(p, end, back)) return;
  if (name_id & kCompressed) {
    unpack_blocks(p, end, size, out);
    return;
  }
  // The words, at the start of the blob this piece is in.
  std::array<std::string_view, kMaxWords> word{};
  {
    const char* w = piece.data() - back;
    std::uint64_t count = 0, len = 0;
    if (!get_varint(w, piece.data(), count) || count > kMaxWords) return;
    for (std::size_t i = 0; i < count; ++i) {
      if (!get_varint(w, piece.data(), len) || len > static_cast<std::uint64_t>(piece.data() - w)) return;
      word[i] = std::string_view(w, len);
      w += len;
    }
  }
  const std::string_view name = name_of(names, static_cast<std::uint32_t>(name_id >> 1));
  // The text's length is known: it is written in place, each copy checked against that length (a
  // piece that says less than it holds is cut there, never written past).
  const std::size_t before = out.size();
  out.resize(before + size);
  char* w = out.data() + before;
  char* const w_end = w + size;
  auto put = [&](const char* from, std::size_t n) {
    n = std::min<std::size_t>(n, static_cast<std::size_t>(w_end - w));
    std::memcpy(w, from, n);
    w += n;
  };
  bool line_start = true;
  while (p < end && w < w_end) {
    if (line_start) {
      line_start = false;
      if (*p == kNoName) ++p;
      else put(name.data(), name.size());
      continue;
    }
    // The run up to the next code or line end goes in one copy. Eight bytes at a time while none of
    // them can be one (a byte below 6 or a newline); then byte by byte.
    const char* run = p;
    while (end - p >= 8) {
      std::uint64_t x;
      std::memcpy(&x, p, sizeof x);
      constexpr std::uint64_t ones = 0x0101010101010101, highs = 0x8080808080808080;
      const std::uint64_t nl = x ^ (ones * '\n');
      if ((((x - ones * 6) & ~x) | ((nl - ones) & ~nl)) & highs) break;
      p += 8;
    }
    while (p < end && !kStop[static_cast<unsigned char>(*p)]) ++p;
    put(run, static_cast<std::size_t>(p - run));
    if (p == end) break;
    const char c = *p++;
    if (c == '\n') {
      if (w < w_end) *w++ = c;
      line_start = true;
    } else if (c == kLiteral) {
      if (p < end && w < w_end) *w++ = *p++;
    } else if (c != kNoName) {
      const auto& wd = word[static_cast<std::size_t>(c - 1)];
      put(wd.data(), wd.size());
    }
  }
  out.resize(static_cast<std::size_t>(w - out.data()));
}

}  // namespace fsaudit::metrics::line_pack
