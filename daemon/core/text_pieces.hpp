#pragma once
// A text held as shared immutable pieces, in order: a large document whose parts change separately
// (the metrics exposition: megabytes at a thousand targets, most of it unchanged between scrapes) is
// served from the pieces themselves, never copied into one string.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fsaudit {

struct TextPieces {
  std::vector<std::string_view> parts;  // into what `owners` keep alive
  std::vector<std::shared_ptr<const void>> owners;
  std::size_t size = 0;  // bytes, all parts together

  // A piece that is a whole string of its own.
  void add(std::shared_ptr<const std::string> p) {
    add(std::string_view(*p));
    keep(std::move(p));
  }
  // A view into something keep() holds (one owner may hold many pieces).
  void add(std::string_view v) {
    size += v.size();
    parts.push_back(v);
  }
  void keep(std::shared_ptr<const void> owner) { owners.push_back(std::move(owner)); }
  std::string join() const;
  static std::shared_ptr<const TextPieces> of(std::string text);
};

}  // namespace fsaudit
