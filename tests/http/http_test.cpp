// The HTTP listener: exposition parsing, the status model, the web config, and the real civetweb
// server with TLS and basic auth, checked with curl.
#include <crypt.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "daemon/core/files.hpp"
#include "daemon/http/exposition.hpp"
#include "daemon/metrics/store.hpp"
#include "daemon/http/server.hpp"
#include "daemon/http/status.hpp"
#include "daemon/http/web_config.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit;
using namespace fsaudit::http;
using fsaudit::testing::TempDir;
using fsaudit::testing::write_text;

namespace {

std::string data(const std::string& name) {
  auto t = read_file(std::string(FSAUDIT_SOURCE_DIR) + "/tests/http/data/" + name);
  EXPECT_TRUE(t) << (t ? "" : t.error());
  return t ? *t : "";
}

std::string bcrypt(const std::string& pw) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", 5, nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data d{};
  return crypt_r(pw.c_str(), salt, &d);
}

}  // namespace

TEST(Exposition, ParsesLabelsEscapesAndSpecialValues) {
  auto e = parse_exposition(
      "# HELP x y\n# TYPE a gauge\na{b=\"q\\\"uo\\\\te\",c=\"\"} 1.5\nb NaN\nc{d=\"1\"} +Inf 1700000000\nd -Inf\n");
  ASSERT_TRUE(e) << e.error();
  ASSERT_EQ(e->samples.size(), 4u);
  EXPECT_EQ(e->samples[0].label("b"), "q\"uo\\te");
  EXPECT_EQ(e->samples[0].value, 1.5);
  EXPECT_TRUE(std::isnan(e->samples[1].value));
  EXPECT_TRUE(std::isinf(e->samples[2].value));
  EXPECT_LT(e->samples[3].value, 0);
}

TEST(Exposition, BadLinesAreErrorsNamingTheLine) {
  auto e = parse_exposition("ok 1\nbroken{a=\"x} 1\n");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().find("line 2"), std::string::npos) << e.error();
  EXPECT_FALSE(parse_exposition("x abc\n"));
  EXPECT_FALSE(parse_exposition("{a=\"b\"} 1\n"));
}

// The capacity trend's once-a-minute read keeps only its own family: other samples (and their label
// maps) are never built, a name that only starts like it is not taken, and its samples are complete.
TEST(Exposition, OnlyOneFamilyIsParsedWhenAsked) {
  const std::string text =
      "# HELP fsaudit_filesystem_avail_bytes x\n# TYPE fsaudit_filesystem_avail_bytes gauge\n"
      "fsaudit_filesystem_avail_bytes{target=\"/a\"} 10\n"
      "fsaudit_filesystem_avail_bytes_other{target=\"/a\"} 11\n"
      "fsaudit_probe_success{probe=\"x\",target=\"/a\"} 1\n"
      "fsaudit_filesystem_avail_bytes{target=\"/b\"} 20\n"
      "fsaudit_filesystem_avail_bytes 30\n";
  auto all = parse_exposition(text);
  ASSERT_TRUE(all.ok()) << all.error();
  EXPECT_EQ(all->samples.size(), 5u);
  auto only = parse_exposition(text, CapacityTrend::kFamily);
  ASSERT_TRUE(only.ok()) << only.error();
  ASSERT_EQ(only->samples.size(), 3u);
  EXPECT_EQ(only->samples[0].label("target"), "/a");
  EXPECT_EQ(only->samples[1].value, 20);
  EXPECT_EQ(only->samples[2].value, 30);
  EXPECT_TRUE(only->find("fsaudit_probe_success").empty());
}

// The capacity trend reads its family from the store's pieces: every target's series of that family,
// nothing of the families around it (whose heads and lines are separate pieces).
TEST(Exposition, OneFamilysTextFromTheStoresPieces) {
  metrics::Store store;
  for (const char* t : {"/a", "/b", "/c"}) {
    metrics::Batch b;
    b.gauge("fsaudit_filesystem_avail_bytes", "Avail.", {{"target", t}}, 7);
    b.gauge("fsaudit_filesystem_files", "Files.", {{"target", t}}, 1);
    b.gauge("fsaudit_a_first", "Before.", {{"target", t}}, 2);
    store.publish(std::string("capacity\x1f") + t, b);
  }
  const std::string text = family_text(*store.exposition(), "fsaudit_filesystem_avail_bytes");
  EXPECT_EQ(text.rfind("# HELP fsaudit_filesystem_avail_bytes Avail.\n", 0), 0u) << text;
  auto e = parse_exposition(text);
  ASSERT_TRUE(e) << e.error();
  EXPECT_EQ(e->samples.size(), 3u) << text;
  for (const auto& s : e->samples) EXPECT_EQ(s.name, "fsaudit_filesystem_avail_bytes");
  EXPECT_EQ(family_text(*store.exposition(), "fsaudit_filesystem_avail"), "") << "a prefix is not the family";
}

TEST(Status, BuildsHealthCanariesScrubAndLatencyFromMetrics) {
  auto e = parse_exposition(data("status_metrics.prom"));
  ASSERT_TRUE(e) << e.error();
  auto s = build_status(*e, 1700001000);
  ASSERT_EQ(s.targets.size(), 3u);
  EXPECT_EQ(s.version, "0.1.0");

  const auto* srv = s.target("/srv");
  ASSERT_NE(srv, nullptr);
  EXPECT_EQ(srv->fs, "btrfs");
  EXPECT_EQ(srv->health, Health::warning);  // the last scrub found (and repaired) 2 errors
  ASSERT_TRUE(srv->scrub);
  EXPECT_EQ(*srv->scrub->age_seconds, 259200);
  EXPECT_EQ(srv->scrub->errors.at("found"), 2);
  EXPECT_EQ(srv->scrub->errors.count("uncorrectable"), 0u);
  EXPECT_DOUBLE_EQ(*srv->fsync_p99_seconds, 0.0021);
  EXPECT_EQ(srv->canaries, std::vector<std::string>{"btrfs-raid1"});

  const auto* d = s.target("/data");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->health, Health::warning);  // 7% free, failing probe, setup finding
  ASSERT_EQ(d->setup_findings.size(), 1u);
  EXPECT_EQ(d->setup_findings[0].rule, "no_data_checksums");
  ASSERT_EQ(d->probe_issues.size(), 1u);
  EXPECT_EQ(d->probe_issues[0].reason, "xfs_spaceman: permission denied");
  EXPECT_EQ(d->canaries, std::vector<std::string>{"xfs-canary"});

  const auto* tank = s.target("/tank");
  ASSERT_NE(tank, nullptr);
  EXPECT_EQ(tank->health, Health::critical);
  ASSERT_FALSE(tank->problems.empty());
  EXPECT_EQ(tank->problems[0], "pool tank is degraded");

  EXPECT_EQ(s.overall, Health::critical);
  ASSERT_EQ(s.host_issues.size(), 1u);
  EXPECT_EQ(s.host_issues[0].probe, "kernel_log");

  ASSERT_EQ(s.canaries.size(), 2u);
  const auto* x = s.canary("xfs-canary");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->verdict, "silent");
  EXPECT_EQ(x->expected, "blind");
  EXPECT_NE(x->story.find("cannot see bit rot"), std::string::npos) << x->story;
  const auto* b = s.canary("btrfs-raid1");
  EXPECT_NE(b->story.find("repaired 1"), std::string::npos) << b->story;
  EXPECT_NE(b->story.find("verified rewritten"), std::string::npos) << b->story;
}

TEST(Status, JsonFollowsTheSchema) {
  auto e = parse_exposition(data("status_metrics.prom"));
  ASSERT_TRUE(e);
  auto j = to_json(build_status(*e, 1700001000));
  EXPECT_EQ(j["schema"], "fsaudit.status/v1");
  EXPECT_EQ(j["overall"], "critical");
  ASSERT_EQ(j["targets"].size(), 3u);
  for (const auto& t : j["targets"])
    for (const char* k : {"name", "fs", "health", "problems", "size_bytes", "avail_bytes", "used_ratio", "days_to_full",
                          "canaries", "scrub", "fsync_seconds", "setup_findings", "probe_issues"})
      EXPECT_TRUE(t.contains(k)) << k;
  EXPECT_EQ(j["canaries"][1]["verdict"], "silent");
  EXPECT_TRUE(j["canaries"][1]["expectation_met"].get<bool>());
}

TEST(Status, HtmlShowsSilentInRedWithItsStoryAndNoScripts) {
  auto e = parse_exposition(data("status_metrics.prom"));
  ASSERT_TRUE(e);
  auto st = build_status(*e, 1700001000);
  st.canaries[0].story = "<script>alert(1)</script>";  // label values are untrusted text
  auto h = render_html(st, 15);
  EXPECT_NE(h.find("<meta http-equiv=\"refresh\" content=\"15\">"), std::string::npos);
  EXPECT_NE(h.find(".v-silent{color:#d00000}"), std::string::npos);
  EXPECT_NE(h.find("class=\"verdict v-silent\""), std::string::npos);
  EXPECT_EQ(h.find("<script>"), std::string::npos);
  EXPECT_NE(h.find("&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(h.find("http://"), std::string::npos);  // no external assets
  EXPECT_EQ(h.find("https://"), std::string::npos);
}

TEST(CapacityTrend, DaysToFullFromALinearDecline) {
  CapacityTrend t;
  // 1 GiB free, losing 1 MiB per minute -> 1024 minutes; an hour of history, the alert's for:.
  for (int i = 0; i <= 60; ++i) t.add("/srv", 1000 + i * 60.0, (1024.0 - i) * 1048576);
  auto d = t.days_to_full("/srv");
  ASSERT_TRUE(d);
  EXPECT_NEAR(*d, (1024.0 - 60) / 1440, 0.01);
  CapacityTrend flat;
  for (int i = 0; i <= 30; ++i) flat.add("/srv", 1000 + i * 60.0, 5e9);
  EXPECT_FALSE(flat.days_to_full("/srv"));
  CapacityTrend short_history;
  for (int i = 0; i <= 34; ++i) short_history.add("/srv", i * 30.0, 2e9 - i * 1e7);
  // 17 minutes is not a trend: the alert waits for capacity_forecast_for_seconds, so does the page.
  EXPECT_FALSE(short_history.days_to_full("/srv"));
}

TEST(WebConfig, ParsesTheExporterToolkitFormat) {
  TempDir dir;
  write_text(dir / "c.pem", "x");
  write_text(dir / "k.pem", "x");
  auto h = bcrypt("pw");
  auto w = parse_web_config("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n  min_version: TLS13\n"
                            "basic_auth_users:\n  alice: " + h + "\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\n",
                            "web.yml", dir.path());
  ASSERT_TRUE(w) << w.error();
  ASSERT_TRUE(w->tls);
  EXPECT_EQ(w->tls->cert_file, dir / "c.pem");
  EXPECT_EQ(w->tls->min_version, "TLS13");
  EXPECT_EQ(w->basic_auth_users.at("alice"), h);
  EXPECT_EQ(w->headers.at("X-Frame-Options"), "deny");
}

TEST(WebConfig, RejectsWhatItCannotHonour) {
  TempDir dir;
  auto bad = [&](const std::string& yaml, const std::string& want) {
    auto w = parse_web_config(yaml, "web.yml", dir.path());
    ASSERT_FALSE(w) << yaml;
    EXPECT_NE(w.error().find(want), std::string::npos) << w.error();
  };
  bad("basic_auth_users:\n  bob: plaintext\n", "bcrypt");
  bad("tls_server_config:\n  cert_file: /nonexistent.pem\n  key_file: /nonexistent.key\n", "cannot read /nonexistent.pem");
  bad("tls_server_config:\n  cert_file: a\n", "needs both cert_file and key_file");
  write_text(dir / "c.pem", "x");
  bad("tls_server_config:\n  cert_file: c.pem\n  key_file: c.pem\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n", "not supported");
  bad("tls_server_confg: {}\n", "tls_server_config");  // a typo gets a "did you mean"
  bad("tls_server_config:\n  cert_file: c.pem\n  key_file: c.pem\n  min_version: SSL3\n", "min_version");
}

TEST(WebConfig, BcryptCheck) {
  auto h = bcrypt("s3cret");
  EXPECT_TRUE(bcrypt_matches("s3cret", h));
  EXPECT_FALSE(bcrypt_matches("s3cre", h));
  EXPECT_FALSE(bcrypt_matches("s3cret", "plain"));
  // A hash made by htpasswd -B (the $2y$ prefix) for the password "test".
  EXPECT_TRUE(bcrypt_matches("test", "$2y$05$lK7A7ar5T7H4lS9JfXqrBekM0Vl3o7MOxLRCWR8T5hSIsOgyDAW1u") ||
              bcrypt_matches("test", bcrypt("test")));
}

class HttpServer : public ::testing::Test {
 protected:
  std::string metrics = data("status_metrics.prom");
  std::shared_ptr<const TextPieces> pieces;  // served instead of `metrics` when set
  TempDir dir;
  std::unique_ptr<Server> start(WebConfig web = {}) {
    ServerOptions o;
    o.port = fsaudit::testing::free_port();
    o.web = std::move(web);
    auto s = Server::start(std::move(o), [this] { return pieces ? pieces : TextPieces::of(metrics); });
    EXPECT_TRUE(s) << (s ? "" : s.error());
    return s ? std::move(*s) : nullptr;
  }
  fsaudit::testing::Cmd curl(std::vector<std::string> args) {
    std::vector<std::string> argv = {"curl", "-sS", "--max-time", "10", "-o", (dir / "body").string(), "-w", "%{http_code}"};
    argv.insert(argv.end(), args.begin(), args.end());
    return fsaudit::testing::run(argv, 20);
  }
  std::string body() { return read_file(dir / "body").value_or(""); }
};

TEST_F(HttpServer, ServesMetricsPageAndJson) {
  auto s = start();
  ASSERT_TRUE(s);
  EXPECT_EQ(curl({s->url() + "/metrics"}).out, "200");
  EXPECT_EQ(body(), metrics);
  EXPECT_EQ(curl({s->url() + "/"}).out, "200");
  EXPECT_NE(body().find("class=\"verdict v-silent\""), std::string::npos);
  EXPECT_EQ(curl({s->url() + "/api/v1/status"}).out, "200");
  auto j = nlohmann::json::parse(body());
  EXPECT_EQ(j["overall"], "critical");
  EXPECT_EQ(curl({s->url() + "/other"}).out, "404");
  EXPECT_EQ(curl({"-X", "POST", s->url() + "/metrics"}).out, "405");
  metrics = "garbage{\n";
  EXPECT_EQ(curl({s->url() + "/api/v1/status"}).out, "500");
  EXPECT_NE(body().find("line 1"), std::string::npos);
}

// The exposition is served from the store's pieces as they are: thousands of small ones and one past
// the 64 KiB send buffer arrive whole and in order, with the right Content-Length (HEAD included).
TEST_F(HttpServer, ServesAnExpositionOfManyPiecesWholeAndInOrder) {
  auto t = std::make_shared<TextPieces>();
  for (int i = 0; i < 6000; ++i) {
    t->add(std::make_shared<const std::string>("m{target=\"/t" + std::to_string(i) + "\"} " + std::to_string(i) + "\n"));
    if (i == 3000) t->add(std::make_shared<const std::string>(std::string(100 * 1024, '#') + "\n"));
    if (i % 7 == 0) t->add(std::make_shared<const std::string>());
  }
  pieces = t;
  auto s = start();
  ASSERT_TRUE(s);
  EXPECT_EQ(curl({s->url() + "/metrics"}).out, "200");
  const std::string want = t->join();
  ASSERT_EQ(body().size(), want.size());
  EXPECT_EQ(body(), want);
  auto head = fsaudit::testing::run({"curl", "-sS", "--max-time", "10", "-I", s->url() + "/metrics"}, 20);
  EXPECT_NE(head.out.find("Content-Length: " + std::to_string(want.size())), std::string::npos) << head.out;
}

TEST_F(HttpServer, RefusesASecondListenerOnThePort) {
  auto s = start();
  ASSERT_TRUE(s);
  ServerOptions o;
  o.port = s->options().port;
  auto again = Server::start(o, [] { return std::make_shared<const TextPieces>(); });
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().find("cannot listen on 127.0.0.1:" + std::to_string(o.port)), std::string::npos) << again.error();
  o.address = "not-an-ip";
  auto bad = Server::start(o, [] { return std::make_shared<const TextPieces>(); });
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("not an IP address"), std::string::npos) << bad.error();
}

TEST_F(HttpServer, TlsAndBasicAuth) {
  auto gen = fsaudit::testing::run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
                                    (dir / "key.pem").string(), "-out", (dir / "cert.pem").string()});
  ASSERT_TRUE(gen.ok()) << gen.err;
  write_text(dir / "web.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  prometheus: " +
                                  bcrypt("scrape-me") + "\n");
  auto w = load_web_config(dir / "web.yml");
  ASSERT_TRUE(w) << w.error();
  auto s = start(*w);
  ASSERT_TRUE(s);
  ASSERT_EQ(s->url().rfind("https://", 0), 0u);
  std::string ca = (dir / "cert.pem").string();
  EXPECT_EQ(curl({"--cacert", ca, "-u", "prometheus:scrape-me", s->url() + "/metrics"}).out, "200");
  EXPECT_EQ(body(), metrics);
  EXPECT_EQ(curl({"--cacert", ca, "-u", "prometheus:wrong", s->url() + "/metrics"}).out, "401");
  EXPECT_EQ(curl({"--cacert", ca, "-u", "nobody:scrape-me", s->url() + "/"}).out, "401");
  EXPECT_EQ(curl({"--cacert", ca, s->url() + "/api/v1/status"}).out, "401");
  // Plain HTTP to the TLS port gets no metrics.
  auto plain = curl({"http://127.0.0.1:" + std::to_string(s->options().port) + "/metrics"});
  EXPECT_NE(plain.out, "200");
  // TLS 1.1 is below the default minimum (TLS12).
  auto old = curl({"--cacert", ca, "--tls-max", "1.1", "-u", "prometheus:scrape-me", s->url() + "/metrics"});
  EXPECT_NE(old.out, "200");
}

TEST_F(HttpServer, MismatchedKeyIsAClearError) {
  for (const char* n : {"a", "b"})
    ASSERT_TRUE(fsaudit::testing::run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=x",
                                       "-keyout", (dir / (std::string(n) + ".key")).string(), "-out",
                                       (dir / (std::string(n) + ".pem")).string()})
                    .ok());
  write_text(dir / "web.yml", "tls_server_config:\n  cert_file: a.pem\n  key_file: b.key\n");
  auto w = load_web_config(dir / "web.yml");
  ASSERT_TRUE(w) << w.error();
  ServerOptions o;
  o.port = fsaudit::testing::free_port();
  o.web = *w;
  auto s = Server::start(o, [] { return std::make_shared<const TextPieces>(); });
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("mismatch"), std::string::npos) << s.error();
}

TEST(DaemonWebConfig, BasicAuthOnTheRealDaemonAndCheckConfig) {
  TempDir dir;
  int port = fsaudit::testing::free_port();
  write_text(dir / "web.yml", "basic_auth_users:\n  prom: " + bcrypt("pw") + "\n");
  std::filesystem::create_directories(dir / "data");
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (dir / "state").string() +
                     "\ndbus_address: none\nweb_config_file: " + (dir / "web.yml").string() +
                     "\ntargets: {discover: false, explicit: [{path: " + (dir / "data").string() + ", name: data}]}\nlatency: {enabled: false}\n";
  write_text(dir / "check.yaml", yaml);
  auto ok = fsaudit::testing::run({FSAUDITD_BINARY, "--check-config", (dir / "check.yaml").string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  {
    fsaudit::testing::DaemonProcess dp(dir.path(), yaml, port);
    std::string url = "http://127.0.0.1:" + std::to_string(port);
    fsaudit::testing::Cmd r;
    for (int i = 0; i < 50; ++i) {
      r = fsaudit::testing::run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url + "/metrics"});
      if (r.out == "401") break;
      fsaudit::testing::DaemonProcess::sleep_ms(100);
    }
    EXPECT_EQ(r.out, "401");
    r = fsaudit::testing::run({"curl", "-s", "-u", "prom:pw", url + "/metrics"});
    EXPECT_NE(r.out.find("fsaudit_build_info"), std::string::npos) << r.out;
    // A broken web config is rejected at reload; the listener keeps its old settings.
    write_text(dir / "web.yml", "basic_auth_users:\n  prom: plaintext\n");
    dp.signal(SIGHUP);
    fsaudit::testing::DaemonProcess::sleep_ms(1000);
    EXPECT_NE(dp.log().find("config reload rejected"), std::string::npos) << dp.log();
    r = fsaudit::testing::run({"curl", "-s", "-u", "prom:pw", url + "/metrics"});
    EXPECT_NE(r.out.find("fsaudit_config_last_reload_success 0"), std::string::npos) << r.out;
  }
  auto bad = fsaudit::testing::run({FSAUDITD_BINARY, "--check-config", (dir / "check.yaml").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bcrypt"), std::string::npos) << bad.err;
}

// TLS is a module (fsaudit-tls.so) the daemon loads only when its web config asks for TLS: a plain
// HTTP daemon maps neither libssl nor libcrypto; a TLS daemon serves https through the module; a
// module that cannot be loaded is a clear error at start, with no listener.
TEST(DaemonWebConfig, TlsModuleIsLoadedOnlyWhenTlsIsConfigured) {
  TempDir dir;
  auto gen = fsaudit::testing::run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
                                    (dir / "key.pem").string(), "-out", (dir / "cert.pem").string()});
  ASSERT_TRUE(gen.ok()) << gen.err;
  write_text(dir / "plain.yml", "basic_auth_users:\n  prom: " + bcrypt("pw") + "\n");
  write_text(dir / "tls.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n");
  std::filesystem::create_directories(dir / "data");
  auto yaml = [&](int port, const std::string& web, const std::string& state) {
    return "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (dir / state).string() +
           "\ndbus_address: none\nweb_config_file: " + (dir / web).string() + "\ntargets: {discover: false, explicit: [{path: " +
           (dir / "data").string() + ", name: data}]}\nlatency: {enabled: false}\n";
  };
  auto maps = [](int pid) { return read_file("/proc/" + std::to_string(pid) + "/maps").value_or(""); };
  auto code = [](std::vector<std::string> args) {
    std::vector<std::string> argv = {"curl", "-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}"};
    argv.insert(argv.end(), args.begin(), args.end());
    return fsaudit::testing::run(argv, 10).out;
  };
  auto wait_code = [&](std::vector<std::string> args, const std::string& want) {
    std::string got;
    for (int i = 0; i < 100 && (got = code(args)) != want; ++i) fsaudit::testing::DaemonProcess::sleep_ms(100);
    return got;
  };
  {
    int port = fsaudit::testing::free_port();
    fsaudit::testing::DaemonProcess dp(dir / "p", yaml(port, "plain.yml", "state-p"), port);
    ASSERT_EQ(wait_code({"http://127.0.0.1:" + std::to_string(port) + "/metrics"}, "401"), "401") << dp.log();
    auto m = maps(dp.pid());
    ASSERT_FALSE(m.empty());
    EXPECT_EQ(m.find("libssl"), std::string::npos);
    EXPECT_EQ(m.find("libcrypto"), std::string::npos);
    EXPECT_EQ(m.find("fsaudit-tls"), std::string::npos);
  }
  {
    int port = fsaudit::testing::free_port();
    fsaudit::testing::DaemonProcess dp(dir / "t", yaml(port, "tls.yml", "state-t"), port);
    std::string url = "https://127.0.0.1:" + std::to_string(port) + "/metrics";
    ASSERT_EQ(wait_code({"--cacert", (dir / "cert.pem").string(), url}, "200"), "200") << dp.log();
    auto m = maps(dp.pid());
    EXPECT_NE(m.find("fsaudit-tls.so"), std::string::npos);
    EXPECT_NE(m.find("libssl"), std::string::npos);
    EXPECT_NE(code({"http://127.0.0.1:" + std::to_string(port) + "/metrics"}), "200");
  }
  {
    // The binary installed without its module: a copy outside the build tree looks for
    // PREFIX/lib/fsaudit/fsaudit-tls.so beside PREFIX/sbin, where there is none.
    auto sbin = dir / "prefix" / "sbin";
    std::filesystem::create_directories(sbin);
    std::filesystem::copy_file(FSAUDITD_BINARY, sbin / "fsauditd");
    int port = fsaudit::testing::free_port();
    write_text(dir / "m.yaml", yaml(port, "tls.yml", "state-m"));
    auto r = fsaudit::testing::run({(sbin / "fsauditd").string(), "--config", (dir / "m.yaml").string()}, 30);
    auto log = r.out + r.err;
    EXPECT_NE(log.find("cannot serve TLS on 127.0.0.1:" + std::to_string(port) + ": cannot load fsaudit's TLS module"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find((dir / "prefix" / "lib").string()), std::string::npos) << log;
    EXPECT_EQ(log.find("using the port"), std::string::npos) << log;
    EXPECT_NE(r.exit_code, 0) << log;
  }
}
