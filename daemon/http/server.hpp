#pragma once
// fsauditd's HTTP listener: /metrics for Prometheus, / for a person, /api/v1/status for scripts.
// A small HTTP/1.1 server of its own (GET/HEAD, one request per connection) with OpenSSL for TLS
// (in a module loaded only when TLS is configured, tls.hpp):
// Debian's civetweb 1.15 dlopens the unversioned libssl.so (shipped only in libssl-dev) and calls
// SSL_get_peer_certificate, which OpenSSL 3 no longer exports, so its TLS crashes on the first
// handshake. TLS and basic auth come from the web config file. Every response is built from the
// metrics store's current snapshot: no probe I/O on the request path.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/core/result.hpp"
#include "daemon/core/text_pieces.hpp"
#include "daemon/http/request_head.hpp"
#include "daemon/http/status.hpp"
#include "daemon/http/tls.hpp"
#include "daemon/http/web_config.hpp"

namespace fsaudit::http {

struct ServerOptions {
  std::string address = "127.0.0.1";  // IPv4 or IPv6 literal
  int port = 9717;
  WebConfig web;
  int threads = 4;
  int refresh_seconds = 30;
  // The capacity history behind "days to full"; shared with the D-Bus status, kept across a
  // listener restart. The server makes its own when none is given.
  std::shared_ptr<CapacityTrend> trend;
  // Feeds `trend` once a minute. Unset: the status source's items are copied and observed; a
  // daemon passes a visit of its store instead, which copies nothing.
  std::function<void(CapacityTrend&, double now)> feed_trend;
};


class Server {
 public:
  // Open connections one source address may hold; beyond it a connection is answered 503 and closed.
  static constexpr std::size_t kMaxConnectionsPerAddress = 16;
  // Open connections in all; beyond it likewise.
  static constexpr std::size_t kMaxConnections = 1024;
  // From accept to the end of the request head (TLS handshake included): a client that has not sent
  // a whole head by then is closed, however often it sends a byte.
  static constexpr int kHeadDeadlineMs = 5000;
  // The current exposition, shared and immutable: a scrape sends it without copying it.
  // The exposition as shared pieces (metrics::Store::exposition()): written out as they are.
  using TextSource = std::function<std::shared_ptr<const TextPieces>()>;
  // The probes' status items (metrics::Store::status()): what / and /api/v1/status are built from.
  using StatusSource = std::function<StatusItemsByKey()>;
  // Listens now; the error says why not (port taken, bad certificate, ...).
  static Result<std::unique_ptr<Server>> start(ServerOptions opts, TextSource metrics_text, StatusSource status = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::string url() const;  // http(s)://ADDRESS:PORT
  const ServerOptions& options() const { return opts_; }
  // The status model as / and /api/v1/status show it (also used by the D-Bus API).
  Result<Status> status() const;
  CapacityTrend& trend() { return *trend_; }

 private:
  Server(ServerOptions opts, TextSource src, StatusSource status);
  Result<void> listen();
  void accept_loop(std::stop_token st);
  void worker(std::stop_token st);
  // An accepted connection: its source address (for the per-address cap), the request head read so
  // far and the moment it must be complete.
  struct Job {
    int fd = -1;
    std::string addr, in;
    std::chrono::steady_clock::time_point deadline;
  };
  void serve(Job& job);
  bool admit(const std::string& addr);  // counts the connection in, or false beyond a cap
  void release(const std::string& addr);
  using Request = RequestHead;
  // Status code, reason, content type, body, extra headers.
  struct Response {
    int code = 200;
    std::string reason = "OK", type, body, headers;
    std::shared_ptr<const TextPieces> shared_body;  // sent instead of `body` when set
  };
  Response respond(const Request& r);
  bool authorised(const std::string& authorization) const;

  ServerOptions opts_;
  TextSource source_;
  StatusSource status_source_;
  std::string host_ = this_host();
  std::shared_ptr<CapacityTrend> trend_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // written once by the destructor: ends the accept loop's poll
  std::unique_ptr<TlsContext> tls_;  // only with TLS configured
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Job> queue_;
  std::map<std::string, std::size_t> per_addr_;  // open connections per source address (under mu_)
  std::size_t open_ = 0;                         // open connections in all (under mu_)
  std::vector<std::jthread> threads_;
  std::jthread sampler_;  // feeds the capacity trend once a minute
};

}  // namespace fsaudit::http
