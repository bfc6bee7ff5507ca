#pragma once
// The store's lines as it keeps them between scrapes: shorter than the text they stand for, written out
// in full on the way to the client (issue 33). The exposition was most of fsauditd's heap at 10,000
// filesystems (20 MB), and most of it was repetition: every line starts with its family's name, and a
// key's lines name the same target (or device, or stack) again and again. A packed blob says each of
// up to three such label texts once, and a line leaves out its family's name: 1,000 filesystems' lines
// took 0.9 MB instead of 2.0. A piece of many lines (a host-wide probe's, one line per device or target)
// is kept LZ4-compressed instead, when that is smaller.
//
// A blob: the words, then one packed piece per family (what a scrape writes out as one piece of the
// exposition). A piece starts with what it needs to be unpacked on its own: the length of its text,
// its family's name (an id the caller resolves) and where its blob's words are.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace fsaudit::metrics::line_pack {

constexpr std::size_t kMaxWords = 3;

struct Words {
  std::array<std::string, kMaxWords> word;
  std::size_t count = 0;
};

// Starts `blob` (empty) with the words.
void start(std::string& blob, const Words& words);
// Appends to `blob` a piece for `lines` (each line ends in '\n' and should start with `name`) of the
// family that `name_id` names. `words` are the ones start() wrote. Returns the piece's offset in `blob`.
std::size_t add(std::string& blob, const Words& words, std::uint32_t name_id, std::string_view name,
                std::string_view lines);
// The length of the text `piece` stands for (0 when it is not a piece add() made).
std::size_t text_size(std::string_view piece);
// Where the words of `piece`'s blob are (null when it is not a piece add() made): for a reader of many
// pieces to fetch ahead, the words being the one read of a piece outside it.
const char* words_of(std::string_view piece);
// Appends the text of `piece`, a view that add() made (from the returned offset to the next piece or
// the blob's end) and that stays inside its blob. `name_of(names, id)` gives a family's name by its id.
using NameOf = std::string_view (*)(const void* names, std::uint32_t id);
void unpack(std::string_view piece, NameOf name_of, const void* names, std::string& out);

}  // namespace fsaudit::metrics::line_pack
