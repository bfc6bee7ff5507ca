#include "daemon/app/scrape_hook.hpp"

#include <civetweb.h>

#include <cstring>
#include <mutex>

namespace fsaudit::app {
namespace {

std::mutex g_mu;
std::shared_ptr<const metrics::Store> g_store;

int serve_metrics(mg_connection* c) {
  const mg_request_info* ri = mg_get_request_info(c);
  if (!ri || !ri->local_uri || std::strcmp(ri->local_uri, "/metrics") != 0) return 0;
  bool head = ri->request_method && std::strcmp(ri->request_method, "HEAD") == 0;
  if (!head && (!ri->request_method || std::strcmp(ri->request_method, "GET") != 0)) return 0;
  std::shared_ptr<const metrics::Store> store;
  {
    std::lock_guard l(g_mu);
    store = g_store;
  }
  if (!store) return 0;
  auto text = store->snapshot();
  mg_printf(c,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "Content-Length: %zu\r\nConnection: close\r\n\r\n",
            text->size());
  if (!head) mg_write(c, text->data(), text->size());
  return 200;
}

}  // namespace

const CivetCallbacks* scrape_callbacks(std::shared_ptr<const metrics::Store> store) {
  static CivetCallbacks callbacks = [] {
    CivetCallbacks cb;
    cb.begin_request = serve_metrics;
    return cb;
  }();
  std::lock_guard l(g_mu);
  g_store = std::move(store);
  return &callbacks;
}

}  // namespace fsaudit::app
