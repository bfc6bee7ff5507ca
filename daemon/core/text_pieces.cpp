#include "daemon/core/text_pieces.hpp"

namespace fsaudit {

std::string TextPieces::join() const {
  std::string out;
  out.reserve(size);
  for (const auto p : parts) out += p;
  return out;
}

std::shared_ptr<const TextPieces> TextPieces::of(std::string text) {
  auto t = std::make_shared<TextPieces>();
  t->add(std::make_shared<const std::string>(std::move(text)));
  return t;
}

}  // namespace fsaudit
