#include "daemon/core/helper_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace fsaudit {

Result<std::string> helper_exchange(const std::string& socket_path, const std::string& request,
                                    std::chrono::milliseconds timeout) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return err(std::string("socket: ") + std::strerror(errno));
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } closer{fd};
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof a.sun_path) return err("helper socket path too long");
  std::memcpy(a.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return err("cannot reach the fsaudit helper at " + socket_path + ": " + std::strerror(errno));
  std::string req = request + "\n";
  // A helper that refuses the caller answers and closes before reading: its answer is the reason.
  std::string send_error;
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
    send_error = "cannot send to the fsaudit helper: " + std::string(std::strerror(errno));
  std::string reply;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[8192];
  while (reply.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return err("the fsaudit helper did not answer in time");
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) return err(std::string("poll: ") + std::strerror(errno));
    if (n <= 0) continue;
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    reply.append(buf, static_cast<std::size_t>(got));
    if (reply.size() > (16u << 20)) return err("the fsaudit helper's answer is too long");
  }
  auto nl = reply.find('\n');
  if (nl == std::string::npos && !send_error.empty()) return err(send_error);
  if (nl == std::string::npos)
    return err("unreadable answer from the fsaudit helper" + std::string(reply.empty() ? " (connection closed)" : ""));
  reply.resize(nl);
  return reply;
}

Result<std::map<std::string, std::string>> helper_call(const std::string& socket_path, const std::string& verb,
                                                       const std::map<std::string, std::string>& args,
                                                       std::chrono::milliseconds timeout) {
  nlohmann::json req{{"verb", verb}};
  for (const auto& [k, v] : args) req[k] = v;
  auto reply = helper_exchange(socket_path, req.dump(), timeout);
  if (!reply) return err(reply.error());
  auto j = nlohmann::json::parse(*reply, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return err("unreadable answer from the fsaudit helper");
  if (!j.value("ok", false)) {
    auto why = j.find("refused");
    return err("the fsaudit helper refused " + verb + ": " +
               (why != j.end() && why->is_string() ? why->get<std::string>() : std::string("no reason given")));
  }
  std::map<std::string, std::string> out;
  auto res = j.find("result");
  if (res != j.end() && res->is_object())
    for (auto it = res->begin(); it != res->end(); ++it) out[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
  return out;
}

}  // namespace fsaudit
