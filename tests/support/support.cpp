#include "tests/support/support.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/runner/runner.hpp"

namespace fsaudit::testing {

std::filesystem::path fixtures_dir() { return FSAUDIT_FIXTURES_DIR; }

std::string fixture(const std::string& name) {
  auto r = read_file(fixtures_dir() / name);
  if (!r) {
    ADD_FAILURE() << "missing fixture: " << r.error();
    return {};
  }
  std::string out;
  for (auto line : split(*r, '\n')) {
    if (line.rfind("# source:", 0) == 0) continue;
    out.append(line);
    out.push_back('\n');
  }
  if (!r->empty() && r->back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

Cmd run(const std::vector<std::string>& argv, int timeout_s) {
  ProcessRunner runner;
  CommandSpec spec;
  spec.argv = argv;
  spec.timeout = std::chrono::seconds(timeout_s);
  spec.key = "";  // tests may run the same command concurrently
  static std::atomic<unsigned> n{0};
  spec.key = "test-" + std::to_string(++n);
  auto r = runner.run(spec);
  Cmd c;
  c.exit_code = r.exited ? r.exit_code : (r.timed_out ? 124 : 125);
  c.out = r.out;
  c.err = r.err.empty() && !r.ok() ? r.describe() : r.err;
  return c;
}

Cmd must(const std::vector<std::string>& argv, int timeout_s) {
  auto c = run(argv, timeout_s);
  if (!c.ok()) {
    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    ADD_FAILURE() << "command failed (" << c.exit_code << "): " << cmd << "\n" << c.err << c.out;
  }
  return c;
}

std::string http_get(int port, const std::string& path, std::string* error, int timeout_ms) {
  auto fail = [&](const std::string& e) {
    if (error) *error = e;
    return std::string();
  };
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail("socket");
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return fail("connect refused");
  }
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) < 0) {
    ::close(fd);
    return fail("send");
  }
  std::string resp;
  char buf[65536];
  while (true) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  auto p = resp.find("\r\n\r\n");
  if (p == std::string::npos) return fail("no HTTP response");
  if (resp.compare(0, 12, "HTTP/1.1 200") != 0 && resp.compare(0, 12, "HTTP/1.0 200") != 0)
    return fail("HTTP status: " + resp.substr(0, resp.find('\r')));
  return resp.substr(p + 4);
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

namespace {
// Parses `name{a="b",c="d"} value` into labels; returns false if not that metric.
bool parse_sample(std::string_view line, const std::string& name, std::map<std::string, std::string>& labels,
                  double& value) {
  if (line.empty() || line[0] == '#') return false;
  if (line.compare(0, name.size(), name) != 0) return false;
  size_t i = name.size();
  if (i < line.size() && line[i] != '{' && line[i] != ' ') return false;
  labels.clear();
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      size_t eq = line.find('=', i);
      if (eq == std::string_view::npos) return false;
      std::string key(line.substr(i, eq - i));
      i = eq + 2;  // skip ="
      std::string val;
      while (i < line.size() && line[i] != '"') {
        if (line[i] == '\\' && i + 1 < line.size()) {
          ++i;
          val.push_back(line[i] == 'n' ? '\n' : line[i]);
        } else {
          val.push_back(line[i]);
        }
        ++i;
      }
      ++i;  // closing quote
      labels[key] = val;
      if (i < line.size() && line[i] == ',') ++i;
    }
    ++i;  // }
  }
  auto rest = trim(line.substr(std::min(i, line.size())));
  auto fields = split_ws(rest);
  if (fields.empty()) return false;
  std::string v(fields[0]);
  if (v == "+Inf") value = std::numeric_limits<double>::infinity();
  else if (v == "-Inf") value = -std::numeric_limits<double>::infinity();
  else if (v == "NaN") value = std::numeric_limits<double>::quiet_NaN();
  else value = std::strtod(v.c_str(), nullptr);
  return true;
}
}  // namespace

double scrape_value(const std::string& text, const std::string& name,
                    const std::map<std::string, std::string>& want) {
  std::map<std::string, std::string> labels;
  double v = 0;
  for (auto line : lines(text)) {
    if (!parse_sample(line, name, labels, v)) continue;
    bool all = true;
    for (const auto& [k, val] : want) {
      auto it = labels.find(k);
      if (it == labels.end() || it->second != val) all = false;
    }
    if (all) return v;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::vector<ScrapeSample> scrape_samples(const std::string& text) {
  std::vector<ScrapeSample> out;
  for (auto line : lines(text)) {
    if (line.empty() || line[0] == '#') continue;
    ScrapeSample s;
    s.name = std::string(line.substr(0, line.find_first_of("{ ")));
    if (parse_sample(line, s.name, s.labels, s.value)) out.push_back(std::move(s));
  }
  return out;
}

std::string scrape_lines(const std::string& text, const std::string& name) {
  std::string out;
  for (auto line : lines(text))
    if (line.compare(0, name.size(), name) == 0) {
      out.append(line);
      out.push_back('\n');
    }
  return out.empty() ? "(no " + name + " samples)\n" : out;
}

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  char* p = ::mkdtemp(tmpl.data());
  if (!p) throw std::runtime_error("mkdtemp failed");
  path_ = p;
}

TempDir::~TempDir() {
  // A process that is still leaving (a dbus-daemon unlinking its socket on SIGTERM) can remove an
  // entry between remove_all's listing and its unlink; remove_all then stops at that error.
  std::error_code ec;
  for (int i = 0; i < 20; ++i) {
    std::filesystem::remove_all(path_, ec);
    if (!ec && !std::filesystem::exists(path_, ec)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
}

std::string unique_name(const std::string& prefix) {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", rd());
  return prefix + buf;
}

FileHolder::FileHolder(const std::vector<std::string>& files, int flags, const std::string& comm) {
  int ready[2];
  if (::pipe(ready) != 0) return;
  std::fflush(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    bool all = true;
    for (const auto& f : files) all = ::open(f.c_str(), flags) >= 0 && all;
    ::prctl(PR_SET_NAME, comm.c_str());
    (void)!::write(ready[1], all ? "y" : "n", 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  if (pid_ > 0) (void)!::read(ready[0], &c, 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ok_ = c == 'y';
}

void FileHolder::release() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int st = 0;
  ::waitpid(pid_, &st, 0);
  pid_ = -1;
}

}  // namespace fsaudit::testing
