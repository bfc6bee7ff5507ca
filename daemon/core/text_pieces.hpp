#pragma once
// A text held as shared immutable pieces, in order: a large document whose parts change separately
// (the metrics exposition: megabytes at a thousand targets, most of it unchanged between scrapes) is
// served from the pieces themselves, never copied into one string.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace fsaudit {

struct TextPieces {
  std::vector<std::shared_ptr<const std::string>> parts;
  std::size_t size = 0;  // bytes, all parts together

  void add(std::shared_ptr<const std::string> p) {
    size += p->size();
    parts.push_back(std::move(p));
  }
  std::string join() const;
  static std::shared_ptr<const TextPieces> of(std::string text);
};

}  // namespace fsaudit
