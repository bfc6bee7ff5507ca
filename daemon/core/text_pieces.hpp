#pragma once
// A text held as shared immutable pieces, in order: a large document whose parts change separately
// (the metrics exposition: megabytes at a thousand targets, most of it unchanged between scrapes) is
// served from the pieces themselves, never copied into one string. A piece may be held packed
// (shorter than its text; metrics/line_pack.hpp): it is written out in full as it is sent.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fsaudit {

struct TextPieces {
  struct Piece {
    const char* data;
    std::uint32_t held;  // bytes at `data`
    std::uint32_t text;  // bytes of text it stands for; 0 for a piece held as it is (then `held`)
    std::string_view view() const { return {data, held}; }
    bool packed() const { return text != 0; }
    std::size_t size() const { return packed() ? text : held; }
  };
  std::vector<Piece> parts;  // into what `owners` keep alive
  std::vector<std::shared_ptr<const void>> owners;
  std::size_t size = 0;  // bytes of text, all parts together
  // Appends the text of a packed piece (set by whoever adds one).
  std::function<void(std::string_view held, std::string& out)> unpack;
  // The one place outside a packed piece that unpacking it reads (null: none), fetched ahead by
  // write(). A scrape of 10,000 targets reads 150,000 pieces spread over the heap: waiting for each
  // piece and then for that place was most of its time.
  std::function<const char*(std::string_view held)> also_reads;

  // A piece that is a whole string of its own.
  void add(std::shared_ptr<const std::string> p) {
    add(std::string_view(*p));
    keep(std::move(p));
  }
  // A view into something keep() holds (one owner may hold many pieces).
  void add(std::string_view v);
  // A packed view (into something keep() holds) that stands for `text_size` bytes of text.
  void add_packed(std::string_view held, std::size_t text_size);
  void keep(std::shared_ptr<const void> owner) { owners.push_back(std::move(owner)); }
  // Appends the text of parts[i].
  void append(std::size_t i, std::string& out) const;
  std::string text_of(std::size_t i) const {
    std::string s;
    append(i, s);
    return s;
  }
  // The text in order, through `emit`, in chunks of about `chunk` bytes gathered in `buf` (which may
  // hold a start already); a piece held as it is and at least `chunk` long goes out on its own. False
  // when an emit did.
  bool write(std::size_t chunk, std::string& buf, const std::function<bool(std::string_view)>& emit) const;
  std::string join() const;
  static std::shared_ptr<const TextPieces> of(std::string text);
};

}  // namespace fsaudit
