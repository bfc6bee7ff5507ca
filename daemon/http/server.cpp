#include "daemon/http/server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace fsaudit::http {
namespace {

constexpr std::size_t kMaxRequestBytes = 16384;
constexpr std::size_t kMaxQueued = 64;

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string base64_decode(std::string_view in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0, acc = 0;
  for (char c : in) {
    if (c == '=') break;
    int v = val(c);
    if (v < 0) return {};
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

// One connection, plain or TLS.
class Conn {
 public:
  Conn(int fd, TlsContext* tls) : fd_(fd), tls_(tls ? tls->wrap(fd) : nullptr) {}
  ~Conn() {
    tls_.reset();  // its close_notify goes out before the fd closes
    ::close(fd_);
  }
  bool tls() const { return tls_ != nullptr; }
  bool handshake(TlsConn::Deadline deadline) { return tls_->handshake(deadline); }
  // Plain reads are bounded by SO_RCVTIMEO (time_left before each); a TLS record may take several.
  long read(char* buf, std::size_t n, TlsConn::Deadline deadline) {
    if (tls_) return tls_->read(buf, n, deadline);
    return ::recv(fd_, buf, n, 0);
  }
  bool write_all(std::string_view s) {
    std::size_t off = 0;
    while (off < s.size()) {
      long w = tls_ ? tls_->write(s.data() + off, s.size() - off) : ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (w <= 0) return false;
      off += static_cast<std::size_t>(w);
    }
    return true;
  }

 private:
  int fd_;
  std::unique_ptr<TlsConn> tls_;
};

}  // namespace

Server::Server(ServerOptions opts, TextSource src, StatusSource status)
    : opts_(std::move(opts)), source_(std::move(src)), status_source_(std::move(status)),
      trend_(opts_.trend ? opts_.trend : std::make_shared<CapacityTrend>()) {}

Result<void> Server::listen() {
  bool v6 = opts_.address.find(':') != std::string::npos;
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(opts_.port));
    if (inet_pton(AF_INET6, opts_.address.c_str(), &a->sin6_addr) != 1) return err("'" + opts_.address + "' is not an IP address");
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(opts_.port));
    if (inet_pton(AF_INET, opts_.address.c_str(), &a->sin_addr) != 1) return err("'" + opts_.address + "' is not an IP address");
    len = sizeof *a;
  }
  int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return err(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 64) != 0) {
    int e = errno;
    ::close(fd);
    return err(std::strerror(e), e == EADDRINUSE ? ErrorKind::in_use : ErrorKind::failed);
  }
  listen_fd_ = fd;
  return {};
}

Result<std::unique_ptr<Server>> Server::start(ServerOptions opts, TextSource metrics_text, StatusSource status) {
  std::unique_ptr<Server> s(new Server(std::move(opts), std::move(metrics_text), std::move(status)));
  std::string where = s->opts_.address + ":" + std::to_string(s->opts_.port);
  if (s->opts_.web.tls) {
    auto ctx = load_tls(*s->opts_.web.tls);
    if (!ctx) return err("cannot serve TLS on " + where + ": " + ctx.error());
    s->tls_ = std::move(*ctx);
  }
  if (auto l = s->listen(); !l) return err_in("cannot listen on " + where + ": ", l);
  s->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->wake_fd_ < 0) return err(std::string("eventfd: ") + std::strerror(errno));
  for (int i = 0; i < std::max(1, s->opts_.threads); ++i)
    s->threads_.emplace_back([p = s.get()](std::stop_token st) { p->worker(st); });
  s->threads_.emplace_back([p = s.get()](std::stop_token st) { p->accept_loop(st); });
  auto trend = s->trend_;
  auto feed = s->opts_.feed_trend;
  if (!feed && s->status_source_)
    feed = [src = s->status_source_](CapacityTrend& t, double now) { t.observe(src(), now); };
  if (feed) s->sampler_ = std::jthread([trend, feed](std::stop_token st) {
    std::mutex mu;
    std::condition_variable_any cv;
    while (!st.stop_requested()) {
      feed(*trend, now_unix());
      std::unique_lock l(mu);
      cv.wait_for(l, st, std::chrono::seconds(60), [] { return false; });
    }
  });
  return s;
}

Server::~Server() {
  sampler_.request_stop();
  for (auto& t : threads_) t.request_stop();
  if (wake_fd_ >= 0) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  }
  cv_.notify_all();
  threads_.clear();  // joins
  if (sampler_.joinable()) sampler_.join();
  for (auto& j : queue_) ::close(j.fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

std::string Server::url() const {
  bool v6 = opts_.address.find(':') != std::string::npos;
  return std::string(opts_.web.tls ? "https" : "http") + "://" + (v6 ? "[" + opts_.address + "]" : opts_.address) + ":" +
         std::to_string(opts_.port);
}

namespace {

std::string peer_address(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof buf);
  else
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, buf, sizeof buf);
  return buf;
}

void set_blocking(int fd, bool on) {
  int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) ::fcntl(fd, F_SETFL, on ? (fl & ~O_NONBLOCK) : (fl | O_NONBLOCK));
}

// Bounds the next blocking read by what is left until the deadline; false when nothing is left.
bool time_left(int fd, std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now()).count();
  if (left <= 0) return false;
  timeval tv{static_cast<time_t>(left / 1000000), static_cast<suseconds_t>(left % 1000000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return true;
}

bool head_complete(const std::string& in) {
  return in.find("\r\n\r\n") != std::string::npos || in.size() > kMaxRequestBytes;
}

// With TLS the loop only peeks: the worker's handshake must read the bytes itself. Whole means the
// first TLS record (the ClientHello) has arrived, so trickling it holds no worker; anything that is
// not a TLS record (plain HTTP on the TLS port) goes to the worker at once, which refuses it.
bool client_hello_complete(int fd) {
  unsigned char h[5];
  long n = ::recv(fd, h, sizeof h, MSG_PEEK);
  if (n <= 0) return n == 0;  // closed: the worker finds out at once
  if (h[0] != 0x16) return true;
  if (n < 5) return false;
  std::size_t want = 5 + (static_cast<std::size_t>(h[3]) << 8 | h[4]);
  std::string buf(want, '\0');
  return ::recv(fd, buf.data(), want, MSG_PEEK) >= static_cast<long>(want);
}

}  // namespace

bool Server::admit(const std::string& addr) {
  std::lock_guard l(mu_);
  auto& n = per_addr_[addr];
  if (n >= kMaxConnectionsPerAddress || open_ >= kMaxConnections) {
    if (n == 0) per_addr_.erase(addr);
    return false;
  }
  ++n;
  ++open_;
  return true;
}

void Server::release(const std::string& addr) {
  std::lock_guard l(mu_);
  if (auto it = per_addr_.find(addr); it != per_addr_.end() && --it->second == 0) per_addr_.erase(it);
  --open_;
}

// One thread reads every plain-HTTP request head (and waits for every TLS ClientHello), with poll, until the head is complete or its
// deadline passes: a worker gets only whole requests, so slow clients (64 of them trickling a byte
// each) never hold the workers a scrape needs. It sleeps until a connection, a byte, the nearest
// deadline or the destructor's wake-up.
void Server::accept_loop(std::stop_token st) {
  std::vector<Job> pending;
  std::vector<pollfd> p;
  auto hand_over = [this](Job&& j) {
    std::lock_guard l(mu_);
    if (queue_.size() >= kMaxQueued) {
      ::close(j.fd);
      if (auto it = per_addr_.find(j.addr); it != per_addr_.end() && --it->second == 0) per_addr_.erase(it);
      --open_;
      return;
    }
    queue_.push_back(std::move(j));
    cv_.notify_one();
  };
  while (!st.stop_requested()) {
    p.assign({{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}});
    int timeout = -1;
    auto now = std::chrono::steady_clock::now();
    for (const auto& j : pending) {
      p.push_back({j.fd, POLLIN, 0});
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(j.deadline - now).count() + 1;
      timeout = timeout < 0 ? static_cast<int>(std::max<long long>(ms, 0)) : std::min(timeout, static_cast<int>(std::max<long long>(ms, 0)));
    }
    if (::poll(p.data(), p.size(), timeout) < 0) continue;
    if (st.stop_requested()) break;
    now = std::chrono::steady_clock::now();
    std::vector<Job> still;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      Job& j = pending[i];
      bool done = false, drop = false;
      if (p[i + 2].revents != 0 && tls_) {
        done = client_hello_complete(j.fd);
      } else if (p[i + 2].revents != 0) {
        char buf[4096];
        long n = ::recv(j.fd, buf, sizeof buf, 0);
        if (n > 0) {
          j.in.append(buf, static_cast<std::size_t>(n));
          done = head_complete(j.in);
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          drop = true;
        }
      }
      if (!done && !drop && now >= j.deadline) drop = true;
      if (done) {
        hand_over(std::move(j));
      } else if (drop) {
        ::close(j.fd);
        release(j.addr);
      } else {
        still.push_back(std::move(j));
      }
    }
    pending = std::move(still);
    if ((p[0].revents & POLLIN) == 0) continue;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    Job j{fd, peer_address(ss), {}, now + std::chrono::milliseconds(kHeadDeadlineMs)};
    if (!admit(j.addr)) {
      static constexpr char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)::send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    // The TLS handshake is driven by the worker once the ClientHello is in, bounded by the same deadline.
    pending.push_back(std::move(j));
  }
  for (auto& j : pending) ::close(j.fd);
}

void Server::worker(std::stop_token st) {
  while (true) {
    Job job;
    {
      std::unique_lock l(mu_);
      if (!cv_.wait(l, st, [&] { return !queue_.empty(); })) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    serve(job);
    release(job.addr);
  }
}

void Server::serve(Job& job) {
  int fd = job.fd;
  set_blocking(fd, true);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  Conn c(fd, tls_.get());
  if (tls_ && (!c.tls() || !c.handshake(job.deadline))) return;  // never plain HTTP on the TLS port
  std::string in = std::move(job.in);
  char buf[4096];
  while (in.find("\r\n\r\n") == std::string::npos) {
    if (in.size() > kMaxRequestBytes) {
      c.write_all("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    if (!time_left(fd, job.deadline)) return;
    long n = c.read(buf, sizeof buf, job.deadline);
    if (n <= 0) return;
    in.append(buf, static_cast<std::size_t>(n));
  }
  auto parsed = parse_request_head(in);
  if (!parsed) {
    c.write_all("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    return;
  }
  const Request& r = *parsed;
  Response resp = respond(r);
  std::string head = "HTTP/1.1 " + std::to_string(resp.code) + " " + resp.reason + "\r\nContent-Type: " + resp.type +
                     "\r\nContent-Length: " + std::to_string(resp.shared_body ? resp.shared_body->size : resp.body.size()) +
                     "\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n" + resp.headers;
  for (const auto& [k, v] : opts_.web.headers) head += k + ": " + v + "\r\n";
  head += "Connection: close\r\n\r\n";
  if (r.method != "HEAD" && !resp.shared_body) head += resp.body;
  if (r.method == "HEAD" || !resp.shared_body) {
    c.write_all(head);
    return;
  }
  // The pieces (tens of thousands at 1,000 targets, most of them a line or two, packed ones unpacked on
  // the way) go out gathered in a reused buffer of a few pages: a few dozen sends (or TLS records), no
  // copy of the whole text.
  constexpr std::size_t kOut = 64 * 1024;
  std::string out = std::move(head);
  out.reserve(kOut);
  resp.shared_body->write(kOut, out, [&](std::string_view s) { return c.write_all(s); });
}

Result<RequestHead> parse_request_head(std::string_view in) {
  RequestHead r;
  auto eol = in.find("\r\n");
  std::string_view line = in.substr(0, eol);
  auto sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1 || line.compare(sp2 + 1, 5, "HTTP/") != 0)
    return err("the request line is not 'METHOD PATH HTTP/x'");
  if (line.find_first_of("\r\n") != std::string_view::npos) return err("a bare CR or LF in the request line");
  r.method = line.substr(0, sp1);
  r.path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (auto q = r.path.find('?'); q != std::string::npos) r.path.resize(q);
  if (eol == std::string_view::npos) return r;
  std::size_t pos = eol + 2;
  while (pos < in.size()) {
    auto e = in.find("\r\n", pos);
    if (e == std::string_view::npos || e == pos) break;
    std::string_view h = in.substr(pos, e - pos);
    pos = e + 2;
    auto colon = h.find(':');
    if (colon == std::string_view::npos) continue;
    if (colon == 13 && strncasecmp(h.data(), "Authorization", 13) == 0) {
      if (h.find_first_of("\r\n") != std::string_view::npos) return err("a bare CR or LF in the Authorization header");
      auto v = h.substr(colon + 1);
      auto first = v.find_first_not_of(' ');
      r.authorization = first == std::string_view::npos ? std::string() : std::string(v.substr(first));
    }
  }
  return r;
}

bool Server::authorised(const std::string& authorization) const {
  if (opts_.web.basic_auth_users.empty()) return true;
  if (authorization.size() < 6 || strncasecmp(authorization.c_str(), "Basic ", 6) != 0) return false;
  std::string cred = base64_decode(authorization.substr(6));
  auto colon = cred.find(':');
  if (colon == std::string::npos) return false;
  auto it = opts_.web.basic_auth_users.find(cred.substr(0, colon));
  if (it == opts_.web.basic_auth_users.end()) {
    // Spend the same bcrypt time for an unknown user, so timing does not reveal user names.
    (void)bcrypt_matches(cred.substr(colon + 1), "$2b$10$abcdefghijklmnopqrstuuqflPDzB6gcMhKa1rZqKiun2YGL5sa2u");
    return false;
  }
  return bcrypt_matches(cred.substr(colon + 1), it->second);
}

Result<Status> Server::status() const {
  return build_status(status_source_ ? status_source_() : StatusItemsByKey{}, now_unix(), trend_.get(), host_);
}

Server::Response Server::respond(const Request& r) {
  const std::string text = "text/plain; charset=utf-8";
  if (!authorised(r.authorization))
    return {401, "Unauthorized", text, "Unauthorized\n", "WWW-Authenticate: Basic realm=\"fsaudit\"\r\n", nullptr};
  if (r.method != "GET" && r.method != "HEAD")
    return {405, "Method Not Allowed", text, "only GET and HEAD\n", "Allow: GET, HEAD\r\n", nullptr};
  if (r.path == "/metrics") {
    auto text = source_();
    if (!text) text = std::make_shared<const TextPieces>();
    return {200, "OK", "text/plain; version=0.0.4; charset=utf-8", "", "", std::move(text)};
  }
  if (r.path == "/" || r.path == "/api/v1/status") {
    auto st = status();
    if (!st) return {500, "Internal Server Error", text, "cannot read the metrics: " + st.error() + "\n", "", nullptr};
    // The page has no scripts and no external assets; the policy tells the browser so as well.
    if (r.path == "/")
      return {200, "OK", "text/html; charset=utf-8", render_html(*st, opts_.refresh_seconds),
              "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'\r\n", nullptr};
    return {200, "OK", "application/json", to_json(*st).dump(2) + "\n", "", nullptr};
  }
  return {404, "Not Found", text, "not found; try /, /metrics or /api/v1/status\n", "", nullptr};
}

}  // namespace fsaudit::http
