#include "daemon/metrics/status_pack.hpp"

#include "daemon/metrics/lz4_block.hpp"

#include <cstdint>
#include <cstring>

namespace fsaudit::metrics {
namespace {

// Every field of every struct, listed once: `fields` drives both packing and unpacking, so a field
// added to a struct and not here is the only way to lose one, and the round-trip test (which fills
// every field and compares with the struct's own ==) fails on it.
template <class S, class F>
void fields(S& s, F&& f) {
  using T = std::remove_const_t<S>;
  if constexpr (std::is_same_v<T, Problem>) {
    f(s.severity), f(s.words), f(s.runbook);
  } else if constexpr (std::is_same_v<T, ScrubFacts>) {
    f(s.age_seconds), f(s.running), f(s.paused), f(s.progress_ratio), f(s.errors), f(s.last_result), f(s.mode),
        f(s.decision);
  } else if constexpr (std::is_same_v<T, RedundancyFacts>) {
    f(s.margin), f(s.designed), f(s.members_down);
  } else if constexpr (std::is_same_v<T, SetupFindingFacts>) {
    f(s.rule), f(s.severity);
  } else if constexpr (std::is_same_v<T, FsFacts>) {
    f(s.target), f(s.pool), f(s.device), f(s.fs), f(s.source), f(s.mounted), f(s.readonly), f(s.data_checksums),
        f(s.size_bytes), f(s.avail_bytes), f(s.files), f(s.files_free), f(s.fsync_p50_seconds),
        f(s.fsync_p99_seconds), f(s.fsync_p999_seconds), f(s.scrub), f(s.redundancy), f(s.members_at_risk),
        f(s.setup_findings), f(s.detection_covered), f(s.covering_canary), f(s.problems);
  } else if constexpr (std::is_same_v<T, KernelErrorFacts>) {
    f(s.device), f(s.target), f(s.last_hour), f(s.last_day);
  } else if constexpr (std::is_same_v<T, CanaryFacts>) {
    f(s.name), f(s.fs), f(s.layout), f(s.mountpoint), f(s.verdict), f(s.expected), f(s.expectation_met),
        f(s.last_run), f(s.meaning), f(s.story);
  } else if constexpr (std::is_same_v<T, RunFacts>) {
    f(s.probe), f(s.target), f(s.reason), f(s.ok), f(s.stuck), f(s.host_wide);
  } else {
    static_assert(std::is_same_v<T, StatusItems>, "a field type pack() and unpack() do not know");
    f(s.filesystems), f(s.kernel_errors), f(s.canaries), f(s.runs), f(s.version), f(s.config_reload_ok);
  }
}

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_boxed : std::false_type {};
template <class T>
struct is_boxed<Boxed<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

// Lengths and counts as LEB128 varints (nearly always one byte), numbers as their bytes, an empty
// optional or box as one 0 byte. A string's length is written plus one: 0 stands for `known`, the
// target its key already names (each of a target's items names it again, in several fields).
struct Writer {
  std::string& out;
  std::string_view known;
  void varint(std::uint64_t v) {
    while (v >= 0x80) out.push_back(static_cast<char>((v & 0x7f) | 0x80)), v >>= 7;
    out.push_back(static_cast<char>(v));
  }
  template <class T>
  void operator()(const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      if (!known.empty() && v == known) return varint(0);
      varint(v.size() + 1);
      out += v;
    } else if constexpr (std::is_same_v<T, bool>) {
      out.push_back(v ? 1 : 0);
    } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, Severity>) {
      varint(static_cast<std::uint32_t>(v));
    } else if constexpr (std::is_same_v<T, double>) {
      char b[sizeof v];
      std::memcpy(b, &v, sizeof v);
      out.append(b, sizeof v);
    } else if constexpr (is_optional<T>::value || is_boxed<T>::value) {
      out.push_back(v ? 1 : 0);
      if (v) (*this)(*v);
    } else if constexpr (is_vector<T>::value) {
      varint(v.size());
      for (const auto& e : v) (*this)(e);
    } else if constexpr (std::is_same_v<T, std::map<std::string, double>>) {
      varint(v.size());
      for (const auto& [k, x] : v) (*this)(k), (*this)(x);
    } else {
      fields(v, *this);  // a status struct; any other type fails fields()' static_assert
    }
  }
};

struct Reader {
  std::string_view in;
  std::string_view known;
  bool ok = true;  // false once the text ran out: every later read gives an empty value
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; ok; shift += 7) {
      if (in.empty() || shift > 63) return ok = false, 0;
      auto c = static_cast<unsigned char>(in.front());
      in.remove_prefix(1);
      v |= static_cast<std::uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) break;
    }
    return v;
  }
  bool byte() {
    if (!ok || in.empty()) return ok = false;
    bool b = in.front() != 0;
    in.remove_prefix(1);
    return b;
  }
  template <class T>
  void operator()(T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      auto n = varint();
      if (!ok) return;
      if (n == 0) return void(v.assign(known));
      if (--n > in.size()) return void(ok = false);
      v.assign(in.substr(0, n));
      in.remove_prefix(n);
    } else if constexpr (std::is_same_v<T, bool>) {
      v = byte();
    } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, Severity>) {
      v = static_cast<T>(static_cast<std::uint32_t>(varint()));
    } else if constexpr (std::is_same_v<T, double>) {
      if (!ok || in.size() < sizeof v) return void(ok = false);
      std::memcpy(&v, in.data(), sizeof v);
      in.remove_prefix(sizeof v);
    } else if constexpr (is_optional<T>::value || is_boxed<T>::value) {
      if (!byte()) return;
      typename std::remove_reference_t<decltype(*v)> x{};
      (*this)(x);
      if (ok) v = std::move(x);
    } else if constexpr (is_vector<T>::value) {
      auto n = varint();
      // Each element takes at least one byte: a count larger than what is left is not from pack().
      if (!ok || n > in.size()) return void(ok = false);
      v.resize(n);
      for (auto& e : v) (*this)(e);
    } else if constexpr (std::is_same_v<T, std::map<std::string, double>>) {
      auto n = varint();
      if (!ok || n > in.size()) return void(ok = false);
      for (std::uint64_t i = 0; i < n && ok; ++i) {
        std::string k;
        double x = 0;
        (*this)(k), (*this)(x);
        if (ok) v[std::move(k)] = x;
      }
    } else {
      fields(v, *this);  // a status struct; any other type fails fields()' static_assert
    }
  }
};

}  // namespace

// The first byte says how the rest is kept: as it is, or (a host-wide probe's items, one per target:
// the same sentences and names thousands of times) as one LZ4 block after its text's length.
constexpr char kPlain = 0, kCompressed = 1;

std::string pack(const StatusItems& items, std::string_view known) {
  std::string out;
  if (items.empty()) return out;
  out.push_back(kPlain);
  Writer w{out, known};
  w(items);
  if (out.size() >= lz4_block::kCompressFrom) {
    const std::string_view plain = std::string_view(out).substr(1);
    std::string z(1, kCompressed);
    Writer{z, {}}.varint(plain.size());
    const std::size_t at = z.size();
    if (lz4_block::saves_enough(at + lz4_block::append(z, plain), plain.size())) out = std::move(z);
  }
  out.shrink_to_fit();
  return out;
}

StatusItems unpack(std::string_view packed, std::string_view known) {
  StatusItems items;
  if (packed.empty()) return items;
  const char how = packed.front();
  packed.remove_prefix(1);
  if (how == kCompressed) {
    Reader sz{packed, {}};
    const std::uint64_t raw = sz.varint();
    // LZ4 makes at most 255 bytes of one: a length past that is not a block pack() made.
    if (!sz.ok || sz.in.empty() || raw > 255 * sz.in.size() + 16) return items;
    std::string plain(raw, '\0');
    const int got = lz4_block::read(sz.in, plain.data(), plain.size());
    if (got < 0) return items;
    plain.resize(static_cast<std::size_t>(got));
    Reader r{plain, known};
    r(items);
    return items;
  }
  if (how != kPlain) return items;
  Reader r{packed, known};
  r(items);
  return items;
}

}  // namespace fsaudit::metrics
