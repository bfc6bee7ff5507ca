#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "daemon/metrics/batch.hpp"
#include "daemon/metrics/line_pack.hpp"
#include "daemon/metrics/store.hpp"

using namespace fsaudit::metrics;

namespace {

struct Packed {
  std::string blob;
  std::vector<std::pair<std::size_t, std::size_t>> pieces;  // offset, held bytes
};

Packed pack_all(const line_pack::Words& w, const std::vector<std::string>& names, const std::vector<std::string>& texts) {
  Packed p;
  line_pack::start(p.blob, w);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    auto off = line_pack::add(p.blob, w, static_cast<std::uint32_t>(i), names[i], texts[i]);
    p.pieces.emplace_back(off, p.blob.size() - off);
  }
  return p;
}

std::string unpack_piece(const Packed& p, std::size_t i, const std::vector<std::string>& names) {
  std::string out;
  line_pack::unpack(
      std::string_view(p.blob).substr(p.pieces[i].first, p.pieces[i].second),
      [](const void* n, std::uint32_t id) { return std::string_view(static_cast<const std::vector<std::string>*>(n)->at(id)); },
      &names, out);
  return out;
}

}  // namespace

// What a key's lines look like: the name and the target on every line. Packed, they take much less
// than their text and read back exactly.
TEST(LinePack, AKeysLinesPackShortAndReadBackExactly) {
  line_pack::Words w;
  w.word[0] = "target=\"/tank/customers/c012345/home\"";
  w.count = 1;
  std::vector<std::string> names = {"fsaudit_filesystem_avail_bytes", "fsaudit_filesystem_info"};
  std::vector<std::string> texts = {
      "fsaudit_filesystem_avail_bytes{fs=\"zfs\",target=\"/tank/customers/c012345/home\"} 15110144\n",
      "fsaudit_filesystem_info{device=\"tank/c012345/home\",fs=\"zfs\",mountpoint=\"/tank/customers/c012345/home\","
      "target=\"/tank/customers/c012345/home\"} 1\n"};
  auto p = pack_all(w, names, texts);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(unpack_piece(p, i, names), texts[i]);
    EXPECT_EQ(line_pack::text_size(std::string_view(p.blob).substr(p.pieces[i].first)), texts[i].size());
  }
  std::size_t text = texts[0].size() + texts[1].size();
  // Two lines: the word is said once for both. A key with a dozen lines packs to under half.
  EXPECT_LT(p.blob.size() * 10, text * 7) << "packed " << p.blob.size() << " of " << text;
}

// Any bytes at all: the codes' own bytes (1..5) in the text, lines that do not start with the name,
// words that overlap, contain codes or newlines, an empty name, no trailing newline.
TEST(LinePack, RandomBytesAndWordsRoundTrip) {
  std::mt19937 rng(33);
  const std::string alphabet = std::string("ab=\"{},\n") + '\x01' + '\x02' + '\x03' + '\x04' + '\x05' + '\0';
  auto random_text = [&](std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
    return s;
  };
  for (int round = 0; round < 3000; ++round) {
    line_pack::Words w;
    w.count = rng() % (line_pack::kMaxWords + 1);
    for (std::size_t i = 0; i < w.count; ++i) w.word[i] = random_text(rng() % 6);
    std::vector<std::string> names, texts;
    const std::size_t n = 1 + rng() % 4;
    for (std::size_t i = 0; i < n; ++i) {
      names.push_back(random_text(rng() % 4));
      std::string t;
      const std::size_t lines = rng() % 5;
      for (std::size_t l = 0; l < lines; ++l) t += (rng() % 2 ? names.back() : "") + random_text(rng() % 12) + "\n";
      if (rng() % 4 == 0) t += random_text(rng() % 5);
      texts.push_back(t);
    }
    auto p = pack_all(w, names, texts);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(unpack_piece(p, i, names), texts[i]) << "round " << round << " piece " << i;
      ASSERT_EQ(line_pack::text_size(std::string_view(p.blob).substr(p.pieces[i].first)), texts[i].size());
    }
  }
}

// Through the store: label values carrying the codes' bytes (as the batch cleans them), a family's name in a value, and
// a batch whose labels repeat in many ways read back as the same text serialize() makes unpacked.
TEST(LinePack, TheStoresTextIsTheUnpackedSerialisation) {
  std::mt19937 rng(3);
  const std::vector<std::string> values = {"/srv/a", std::string("/srv/\x01\x02\x03\x04\x05"), "x_bytes",
                                           "/srv/a/b", "loop7", "", "\xc3\xa9t\xc3\xa9"};
  for (int round = 0; round < 300; ++round) {
    Batch b;
    const int series = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < series; ++i) {
      Labels l;
      for (const char* k : {"target", "device", "stack", "mountpoint"})
        if (rng() % 3) l[k] = values[rng() % values.size()];
      switch (rng() % 4) {
        case 0: b.gauge("x_bytes", "X.", l, i); break;
        case 1: b.counter("y_total", "Y.", l, i); break;
        case 2: b.info("x_info", "I.", l); break;
        default: b.histogram("z_seconds", "Z.", l, {0.001, 0.1}, {1, 2, 3}, 0.5); break;
      }
    }
    Store s;
    s.publish("k", b);
    ASSERT_EQ(s.text(), serialize(b)) << "round " << round;
    ASSERT_EQ(s.exposition()->size, serialize(b).size());
  }
}

// A host-wide probe's piece: one line per device or target, each naming its own, which the words cannot
// say. Kept as LZ4 blocks (several, cut at line ends) it takes a fraction of its text and reads back
// exactly; text that does not compress (random bytes) stays the words' way, and reads back too.
TEST(LinePack, ManyLinesOfOneKeyAreCompressedAndReadBackExactly) {
  line_pack::Words none;
  std::vector<std::string> names = {"fsaudit_stack_info", "fsaudit_disk_info"};
  std::string stack, disk;
  for (int i = 0; i < 3000; ++i) {
    const auto n = std::to_string(i);
    stack += "fsaudit_stack_info{compression=\"off\",data_checksums=\"off\",fs=\"ext4\",redundancy=\"plain\",target=\"/srv/ext4-" +
             n + "\"} 1\n";
    disk += "fsaudit_disk_info{backing_file=\"/var/tmp/ext4-" + n + ".img\",disk=\"loop" + n + "\",transport=\"loop\"} 1\n";
  }
  std::vector<std::string> texts = {stack, disk};
  auto p = pack_all(none, names, texts);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    ASSERT_GT(texts[i].size(), 2 * 64 * 1024) << "more than one block";
    EXPECT_EQ(unpack_piece(p, i, names), texts[i]);
    EXPECT_EQ(line_pack::text_size(std::string_view(p.blob).substr(p.pieces[i].first)), texts[i].size());
    EXPECT_LT(p.pieces[i].second * 4, texts[i].size()) << "piece " << i << ": " << p.pieces[i].second << " of " << texts[i].size();
  }

  std::mt19937 rng(7);
  std::string noise;
  for (int i = 0; i < 5000; ++i) noise += static_cast<char>(rng() % 256);
  noise += '\n';
  auto q = pack_all(none, {"x"}, {noise});
  EXPECT_EQ(unpack_piece(q, 0, {"x"}), noise);
  EXPECT_GE(q.pieces[0].second, noise.size()) << "not compressed: LZ4 would not have saved a quarter";
}

// A compressed piece cut anywhere, or with a byte changed, never reads or writes outside itself (ASan)
// and never gives more than the text it says.
TEST(LinePack, ACutOrDamagedCompressedPieceStaysInside) {
  line_pack::Words none;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "fsaudit_disk_smart_state{disk=\"loop" + std::to_string(i) + "\",state=\"ok\"} 0\n";
  auto p = pack_all(none, {"fsaudit_disk_smart_state"}, {text});
  const std::string piece = p.blob.substr(p.pieces[0].first);
  std::vector<std::string> names = {"fsaudit_disk_smart_state"};
  auto name_of = [](const void* n, std::uint32_t id) { return std::string_view(static_cast<const std::vector<std::string>*>(n)->at(id)); };
  std::mt19937 rng(11);
  for (int round = 0; round < 400; ++round) {
    std::string cut = piece.substr(0, rng() % (piece.size() + 1));
    if (round % 2 && !cut.empty()) cut[rng() % cut.size()] = static_cast<char>(rng());
    // On the heap at its own size, so that ASan sees a read past its end.
    std::unique_ptr<char[]> own(new char[cut.size() + 1]);
    std::memcpy(own.get(), cut.data(), cut.size());
    std::string out;
    line_pack::unpack(std::string_view(own.get(), cut.size()), name_of, &names, out);
    ASSERT_LE(out.size(), text.size()) << "round " << round;
    if (round % 2 == 0) {
      ASSERT_EQ(out, text.substr(0, out.size())) << "a cut piece gives a start of its text, round " << round;
    }
  }
}
