#include "probes/canary/state_json.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace fsaudit::canary::state_json {

using nlohmann::json;

Result<std::optional<std::string>> read_state_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>{};
    if (errno == ELOOP) return err(path.string() + " is a symlink; a state file never is (not followed)");
    return err("cannot open " + path.string() + ": " + std::strerror(errno));
  }
  struct stat st {};
  std::string text;
  std::string problem;
  if (::fstat(fd, &st) != 0) {
    problem = "cannot stat " + path.string() + ": " + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    problem = path.string() + " is not a regular file";
  } else if (static_cast<std::uint64_t>(st.st_size) > kMaxStateFileBytes) {
    problem = path.string() + " is " + std::to_string(st.st_size) + " bytes, more than the " +
              std::to_string(kMaxStateFileBytes) + " a state file may have";
  } else {
    char buf[4096];
    while (text.size() <= kMaxStateFileBytes) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        problem = "cannot read " + path.string() + ": " + std::strerror(errno);
        break;
      }
      if (n == 0) break;
      text.append(buf, static_cast<std::size_t>(n));
    }
    // It grew while read.
    if (problem.empty() && text.size() > kMaxStateFileBytes) problem = path.string() + " grew past " + std::to_string(kMaxStateFileBytes) + " bytes";
  }
  ::close(fd);
  if (!problem.empty()) return err(problem);
  return std::optional<std::string>{std::move(text)};
}

Result<json> parse_object(std::string_view text) {
  if (text.size() > kMaxStateFileBytes)
    return err("it is " + std::to_string(text.size()) + " bytes, more than the " + std::to_string(kMaxStateFileBytes) +
               " a state file may have");
  // Without exceptions: a parse error (invalid UTF-8 included) is a discarded value.
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return err("it is not valid JSON");
  if (!j.is_object()) return err("it is not a JSON object");
  return j;
}

Result<std::optional<std::string>> string_field(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::optional<std::string>{};
  if (!it->is_string()) return err(std::string("\"") + key + "\" is not a string");
  const auto& s = it->get_ref<const std::string&>();
  if (s.size() > kMaxStringBytes) return err(std::string("\"") + key + "\" is longer than " + std::to_string(kMaxStringBytes) + " bytes");
  if (s.find('\0') != std::string::npos) return err(std::string("\"") + key + "\" contains a NUL byte");
  return std::optional<std::string>{s};
}

Result<std::optional<std::uint64_t>> u64_field(const json& obj, const char* key, std::uint64_t max) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::optional<std::uint64_t>{};
  std::uint64_t v = 0;
  if (it->is_number_unsigned()) {
    v = it->get<std::uint64_t>();
  } else if (it->is_number_integer()) {
    auto i = it->get<std::int64_t>();
    if (i < 0) return err(std::string("\"") + key + "\" is negative (" + std::to_string(i) + ")");
    v = static_cast<std::uint64_t>(i);
  } else {
    // A float here is either a fraction or an integer too large for 64 bits (JSON parsers make it a double).
    return err(std::string("\"") + key + "\" is not a whole number of at most 64 bits");
  }
  if (v > max) return err(std::string("\"") + key + "\" is " + std::to_string(v) + ", more than " + std::to_string(max));
  return std::optional<std::uint64_t>{v};
}

Result<std::optional<double>> number_field(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::optional<double>{};
  if (!it->is_number()) return err(std::string("\"") + key + "\" is not a number");
  double d = it->get<double>();
  if (!std::isfinite(d)) return err(std::string("\"") + key + "\" is not finite");
  return std::optional<double>{d};
}

}  // namespace fsaudit::canary::state_json
