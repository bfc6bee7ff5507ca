#include "daemon/core/text_pieces.hpp"

#include <limits>
#include <stdexcept>

namespace fsaudit {
namespace {

std::uint32_t piece_size(std::size_t n) {
  // A piece is one key's lines of one family, or a family's head: far below 4 GiB.
  if (n > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("a text piece of 4 GiB or more");
  return static_cast<std::uint32_t>(n);
}

}  // namespace

void TextPieces::add(std::string_view v) {
  size += v.size();
  parts.push_back({v.data(), piece_size(v.size()), 0});
}

void TextPieces::add_packed(std::string_view held, std::size_t text_size) {
  if (text_size == 0) return;  // no text: nothing to write
  size += text_size;
  parts.push_back({held.data(), piece_size(held.size()), piece_size(text_size)});
}

void TextPieces::append(std::size_t i, std::string& out) const {
  const Piece& p = parts[i];
  if (!p.packed()) {
    out.append(p.data, p.held);
    return;
  }
  // Exactly the size it said: Content-Length was sent from `size`, so a short unpack pads (never
  // made by line_pack) rather than leave the client waiting, and a long one is cut.
  const auto before = out.size();
  if (unpack) unpack(p.view(), out);
  out.resize(before + p.text, '\n');
}

bool TextPieces::write(std::size_t chunk, std::string& buf, const std::function<bool(std::string_view)>& emit) const {
  // How far ahead to fetch: a piece, then (once it is here) what it also reads.
  constexpr std::size_t kAhead = 16, kAlsoAhead = 8;
  const std::size_t n = parts.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) __builtin_prefetch(parts[i + kAhead].data);
    if (also_reads && i + kAlsoAhead < n && parts[i + kAlsoAhead].packed())
      if (const char* p = also_reads(parts[i + kAlsoAhead].view())) __builtin_prefetch(p);
    const auto& p = parts[i];
    if (buf.size() + p.size() > chunk && !buf.empty()) {
      if (!emit(buf)) return false;
      buf.clear();
    }
    if (!p.packed() && p.size() >= chunk) {
      if (!emit(p.view())) return false;
    } else {
      append(i, buf);
    }
  }
  return buf.empty() || emit(buf);
}

std::string TextPieces::join() const {
  std::string out;
  out.reserve(size);
  for (std::size_t i = 0; i < parts.size(); ++i) append(i, out);
  return out;
}

std::shared_ptr<const TextPieces> TextPieces::of(std::string text) {
  auto t = std::make_shared<TextPieces>();
  t->add(std::make_shared<const std::string>(std::move(text)));
  return t;
}

}  // namespace fsaudit
