// Pure parser of /proc/mdstat (parse.hpp); the probe reads it and the md sysfs files.
#include "probes/md/parse.hpp"

#include <algorithm>
#include <cctype>

#include "daemon/core/strings.hpp"

namespace fsaudit::md {

namespace {

bool is_array_header(std::string_view line) {
  // "md0 : active raid1 ..." (names: md<N>, md_<name>, md<N>p<M> is never listed)
  if (!line.starts_with("md")) return false;
  auto p = line.find(" : ");
  return p != std::string_view::npos && line.substr(0, p).find(' ') == std::string_view::npos;
}

std::optional<Member> parse_member(std::string_view tok) {
  auto open = tok.find('[');
  auto close = tok.find(']', open == std::string_view::npos ? 0 : open);
  if (open == std::string_view::npos || close == std::string_view::npos || open == 0) return std::nullopt;
  Member m;
  m.name = std::string(tok.substr(0, open));
  auto slot = parse_u64(tok.substr(open + 1, close - open - 1));
  if (!slot) return std::nullopt;
  m.slot = static_cast<int>(*slot);
  auto flags = tok.substr(close + 1);
  for (size_t i = 0; i + 2 < flags.size() + 1; ++i) {
    if (flags[i] != '(' || i + 2 >= flags.size() || flags[i + 2] != ')') continue;
    switch (flags[i + 1]) {
      case 'F': m.faulty = true; break;
      case 'S': m.spare = true; break;
      case 'W': m.write_mostly = true; break;
      case 'J': m.journal = true; break;
      case 'R': m.replacement = true; break;
      default: break;
    }
  }
  return m;
}

// "[=>...]  recovery =  8.5% (166106112/1953382464) finish=166.5min speed=178832K/sec"
std::optional<SyncProgress> parse_progress(std::string_view line) {
  static const char* const actions[] = {"resync", "recovery", "check", "repair", "reshape", "recover"};
  auto eq = line.find(" =");
  if (eq == std::string_view::npos) return std::nullopt;
  auto before = trim(line.substr(0, eq));
  auto ws_before = split_ws(before);
  if (ws_before.empty()) return std::nullopt;
  auto action = ws_before.back();
  bool known = false;
  for (const auto* a : actions) known = known || action == a;
  if (!known) return std::nullopt;
  SyncProgress p;
  p.action = std::string(action);
  auto rest = split_ws(line.substr(eq + 2));
  for (auto tok : rest) {
    if (tok.ends_with("%")) {
      if (auto v = parse_double(tok.substr(0, tok.size() - 1))) p.ratio = *v / 100.0;
    } else if (tok.starts_with("(") && tok.ends_with(")")) {
      auto inner = tok.substr(1, tok.size() - 2);
      auto slash = inner.find('/');
      if (slash != std::string_view::npos) {
        p.done_kib = parse_u64(inner.substr(0, slash)).value_or(0);
        p.total_kib = parse_u64(inner.substr(slash + 1)).value_or(0);
      }
    } else if (tok.starts_with("finish=") && tok.ends_with("min")) {
      if (auto v = parse_double(tok.substr(7, tok.size() - 10))) p.finish_seconds = *v * 60;
    } else if (tok.starts_with("speed=") && tok.ends_with("K/sec")) {
      if (auto v = parse_double(tok.substr(6, tok.size() - 11))) p.speed_bytes_per_second = *v * 1024;
    }
  }
  return p;
}

void parse_detail_line(std::string_view line, Array& a) {
  auto ws = split_ws(line);
  if (ws.size() >= 2 && ws[1] == "blocks") {
    a.blocks_kib = parse_u64(ws[0]);
    for (size_t i = 2; i < ws.size(); ++i) {
      if (ws[i] == "super" && i + 1 < ws.size()) a.super_version = std::string(ws[i + 1]);
      auto tok = ws[i];
      if (tok.size() >= 3 && tok.front() == '[' && tok.back() == ']') {
        auto inner = tok.substr(1, tok.size() - 2);
        auto slash = inner.find('/');
        if (slash != std::string_view::npos) {
          auto e = parse_u64(inner.substr(0, slash));
          auto act = parse_u64(inner.substr(slash + 1));
          if (e && act) {
            a.disks_expected = static_cast<int>(*e);
            a.disks_active = static_cast<int>(*act);
          }
        } else if (std::all_of(inner.begin(), inner.end(), [](char c) { return c == 'U' || c == '_'; })) {
          a.status_map = std::string(inner);
        }
      }
    }
    return;
  }
  auto t = trim(line);
  // "resync=DELAYED", "resync=PENDING", "resync=REMOTE" (status_resync); any action word before '='.
  for (const auto* pend : {"resync=", "reshape=", "recovery=", "recover=", "check=", "repair="}) {
    if (t.starts_with(pend)) {
      auto n = std::string_view(pend).size();
      a.sync_pending_action = std::string(t.substr(0, n - 1));
      a.sync_pending = std::string(trim(t.substr(n)));
      return;
    }
  }
  if (t.starts_with("[") || t.find(" = ") != std::string_view::npos || t.find(" =") != std::string_view::npos) {
    if (auto p = parse_progress(t)) a.sync = p;
  }
}

}  // namespace

std::string mdstat_sync_action(const Array& a) {
  auto kernel_name = [](std::string_view action) {
    return action == "recovery" ? std::string("recover") : std::string(action);
  };
  if (a.sync) return kernel_name(a.sync->action);
  if (!a.sync_pending_action.empty() && a.sync_pending != "PENDING") return kernel_name(a.sync_pending_action);
  return "idle";
}

Result<Mdstat> parse_mdstat(std::string_view text) {
  auto r = parse_mdstat_until_cut(text);
  if (!r) return err(r.error());
  if (!r->cut.empty()) return err(r->cut);
  return std::move(r->mdstat);
}

Result<MdstatUntilCut> parse_mdstat_until_cut(std::string_view text) {
  MdstatUntilCut out;
  Mdstat& s = out.mdstat;
  std::size_t whole = 0;  // arrays ended by their blank line
  auto cut = [&](std::string why) -> Result<MdstatUntilCut> {
    s.arrays.resize(whole);
    out.cut = std::move(why);
    return std::move(out);
  };
  bool seen_header = false;
  bool seen_end = false;  // md_seq_show ends every read with "unused devices: ..."
  Array* cur = nullptr;
  for (auto raw : lines(text)) {
    auto line = trim(raw);
    if (line.empty()) {
      if (cur && raw.data() + raw.size() < text.data() + text.size()) whole = s.arrays.size();
      cur = nullptr;
      continue;
    }
    if (line.starts_with("Personalities :") || line.starts_with("Personalities:")) {
      seen_header = true;
      for (auto tok : split_ws(line.substr(line.find(':') + 1)))
        if (tok.size() > 2 && tok.front() == '[' && tok.back() == ']')
          s.personalities.emplace_back(tok.substr(1, tok.size() - 2));
      continue;
    }
    if (line.starts_with("unused devices:")) {
      // md_seq_show prints "<none>" or one "name " per spare-less device, then a newline: anything
      // else, or the line without its newline, is a cut ("unused dev", "<no", "sdb1 sd").
      auto list = trim(line.substr(15));
      bool whole = text.find('\n', static_cast<std::size_t>(raw.data() - text.data())) != std::string_view::npos;
      if (!whole || list.empty() || (list.find('<') != std::string_view::npos && list != "<none>"))
        return cut("the 'unused devices:' end line is cut short: '" + std::string(line.substr(0, 80)) + "'");
      seen_header = true;
      seen_end = true;
      cur = nullptr;
      continue;
    }
    if (is_array_header(line)) {
      seen_header = true;
      Array a;
      auto p = line.find(" : ");
      a.name = std::string(line.substr(0, p));
      auto toks = split_ws(line.substr(p + 3));
      size_t i = 0;
      if (i < toks.size() && toks[i] == "active") a.active = true;
      if (i < toks.size() && (toks[i] == "active" || toks[i] == "inactive")) ++i;
      for (; i < toks.size(); ++i) {
        if (toks[i] == "(read-only)") a.read_only = true;
        else if (toks[i] == "(auto-read-only)") a.auto_read_only = true;
        else break;
      }
      if (a.active && i < toks.size() && toks[i].find('[') == std::string_view::npos) a.level = std::string(toks[i++]);
      for (; i < toks.size(); ++i)
        if (auto m = parse_member(toks[i])) a.members.push_back(std::move(*m));
      s.arrays.push_back(std::move(a));
      cur = &s.arrays.back();
      continue;
    }
    if (cur) parse_detail_line(raw, *cur);
  }
  if (!seen_header) {
    auto ls = lines(text);
    return err("not /proc/mdstat content" +
               (ls.empty() ? std::string(" (empty)") : ": '" + std::string(trim(ls.front()).substr(0, 80)) + "'"));
  }
  if (!seen_end)
    return cut("no 'unused devices:' line at the end: the content is cut short, arrays after the cut would be missed");
  return out;
}

}  // namespace fsaudit::md
