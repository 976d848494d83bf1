// The dashboard's HTTP contract through a real server on 127.0.0.1: the API over a runs folder,
// live updates, the control verbs, and every bad request answered with a clear 4xx (never a crash,
// never a file from outside the runs folder).
#include "serve/server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "run_log.h"

namespace marathon::serve {
namespace {

namespace mt = marathon::testing;
namespace fs = std::filesystem;

class Server : public ::testing::Test {
 protected:
  void SetUp() override { start("127.0.0.1", ""); }
  void TearDown() override { stop(); }

  void start(const std::string& bind, const std::string& token) {
    ServeOptions o;
    o.runs_dir = runs_;
    o.bind = bind;
    o.port = 0;
    o.token = token;
    o.max_body_bytes = 4096;
    o.stream_poll_s = 0.05;
    dashboard_ = std::make_unique<Dashboard>(o);
    port_ = dashboard_->bind();
    thread_ = std::thread([this] { dashboard_->serve(); });
  }
  void stop() {
    if (!dashboard_) return;
    dashboard_->stop();
    thread_.join();
    dashboard_.reset();
  }
  httplib::Client client() {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(10, 0);
    return c;
  }
  // GET path; the status and the body parsed as JSON (null when it is not JSON).
  std::pair<int, json> get(const std::string& path, const httplib::Headers& h = {}) {
    auto r = client().Get(path, h);
    if (!r) return {0, nullptr};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  std::pair<int, json> post(const std::string& path, const std::string& body,
                            const std::string& type = "application/json",
                            const httplib::Headers& h = {}) {
    auto r = client().Post(path, h, body, type);
    if (!r) return {0, nullptr};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  size_t goal_events() {
    return mt::events_of_type(mt::load_events(log_.dir()), events::GoalChanged::kType).size();
  }

  mt::TempDir tmp_{"serve"};
  fs::path runs_ = [this] {
    fs::create_directories(tmp_ / "runs");
    return tmp_ / "runs";
  }();
  mt::RunLog log_{runs_ / "r1"};
  std::unique_ptr<Dashboard> dashboard_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(Server, RunsAndOneRunHaveOneEvaluationPerEvalFinished) {
  log_.write("value = 3\n");
  log_.eval(3.0);
  log_.eval(std::nullopt, false);
  auto [status, runs] = get("/api/runs");
  ASSERT_EQ(status, 200) << runs;
  ASSERT_EQ(runs["runs"].size(), 1u);
  EXPECT_EQ(runs["runs"][0]["id"], "r1");
  EXPECT_EQ(runs["runs"][0]["phase"], "crashed") << "open, and no runner holds its lock";
  EXPECT_EQ(runs["runs"][0]["task"], "tiny");

  auto [s2, run] = get("/api/runs/r1");
  ASSERT_EQ(s2, 200) << run;
  EXPECT_EQ(run["evaluations"].size(), 2u);
  EXPECT_EQ(run["evaluations"][1]["kind"], "incorrect");
  EXPECT_FALSE(run["state"].contains("ledger"));

  auto [s3, events] = get("/api/runs/r1/events?limit=3");
  ASSERT_EQ(s3, 200);
  EXPECT_EQ(events["events"].size(), 3u);

  auto [s4, cand] = get("/api/runs/r1/candidates/" + log_.candidate());
  ASSERT_EQ(s4, 200) << cand;
  EXPECT_EQ(cand["files"]["solution.txt"], "value = 3\n");
}

TEST_F(Server, ThePageAndItsFilesAreServedWithoutTheNetwork) {
  auto r = client().Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("/assets/chart.js"), std::string::npos);
  EXPECT_EQ(r->body.find("http"), std::string::npos) << "no link leaves the server";
  EXPECT_NE(r->get_header_value("Content-Security-Policy").find("default-src 'none'"),
            std::string::npos);
  auto chart = client().Get("/assets/chart.js");
  ASSERT_TRUE(chart);
  EXPECT_NE(chart->body.find("Chart.js v3"), std::string::npos);
}

TEST_F(Server, ABadRunIdIsA400SayingWhatAnIdIs) {
  for (const char* path : {"/api/runs/..", "/api/runs/%2e%2e", "/api/runs/.hidden",
                           "/api/runs/%252e%252e", "/api/runs/a%20b", "/api/runs/"}) {
    auto [status, body] = get(path);
    EXPECT_EQ(status, 400) << path << " " << body;
    EXPECT_NE(body.value("error", "").find("bad run id"), std::string::npos) << path << body;
  }
  auto [status, body] = get("/api/runs/nope");
  EXPECT_EQ(status, 404);
  EXPECT_NE(body.value("error", "").find("no run 'nope'"), std::string::npos);
}

TEST_F(Server, APathThatLeavesTheRunsFolderGetsNoFileFromOutside) {
  fs::create_directories(tmp_ / "outside");
  mt::RunLog outside(tmp_ / "outside" / "secret-run");
  std::ofstream(tmp_ / "secret.txt") << "TOP-SECRET-BYTES";
  // A link to a run outside the folder is not a run of the folder.
  fs::create_directory_symlink(tmp_ / "outside" / "secret-run", runs_ / "linked");
  for (const std::string path :
       {"/api/runs/../secret.txt", "/api/runs/..%2Fsecret.txt", "/api/runs/%2e%2e%2fsecret.txt",
        "/api/runs/..%2F..%2F..%2Fetc%2Fpasswd", "/api/runs/r1/../../secret.txt",
        "/api/runs/r1/candidates/..%2F..%2Fsecret.txt", "/assets/..%2F..%2Fsecret.txt",
        "/../secret.txt", "/api/runs/linked", "/api/runs/linked/events",
        "/api/runs/%2Fetc%2Fpasswd"}) {
    auto r = client().Get(path);
    ASSERT_TRUE(r) << path << ": the server must answer";
    EXPECT_GE(r->status, 400) << path;
    EXPECT_LT(r->status, 500) << path << " " << r->body;
    EXPECT_EQ(r->body.find("TOP-SECRET"), std::string::npos) << path;
    EXPECT_EQ(r->body.find("root:"), std::string::npos) << path;
    EXPECT_FALSE(json::parse(r->body, nullptr, false).value("error", "").empty())
        << path << " " << r->body;
  }
  auto [status, runs] = get("/api/runs");
  EXPECT_EQ(runs["runs"].size(), 1u) << "the linked run is not listed: " << runs;
}

TEST_F(Server, AGoalEditFromTheApiAppendsGoalChangedThroughTheVerb) {
  size_t before = goal_events();
  auto [status, body] = post("/api/runs/r1/goal", R"({"verb": "edit", "text": "reach 10"})");
  ASSERT_EQ(status, 200) << body;
  EXPECT_EQ(goal_events(), before + 1);
  EXPECT_EQ(mt::load_state(log_.dir()).goal.objective, "reach 10");

  auto [s2, b2] = post("/api/runs/r1/goal", R"({"verb": "edit"})");
  EXPECT_EQ(s2, 400);
  EXPECT_NE(b2.value("error", "").find("needs the objective text"), std::string::npos) << b2;
  auto [s3, b3] = post("/api/runs/r1/goal", R"({"verb": "explode"})");
  EXPECT_EQ(s3, 400);
  EXPECT_NE(b3.value("error", "").find("set, edit, pause, resume, clear"), std::string::npos);
  auto [s4, b4] = post("/api/runs/r1/goal", "not json");
  EXPECT_EQ(s4, 400);
  auto [s5, b5] = post("/api/runs/r1/compact", R"({"now": true})");
  EXPECT_EQ(s5, 409) << "compact --now on an open run: " << b5;
  EXPECT_EQ(goal_events(), before + 1) << "refused requests append nothing";
}

TEST_F(Server, AWriteMustBeJsonFromTheSameOriginAndFitTheLimit) {
  size_t before = goal_events();
  auto [s1, b1] = post("/api/runs/r1/goal", "verb=pause", "application/x-www-form-urlencoded");
  EXPECT_EQ(s1, 415) << b1;
  auto [s2, b2] = post("/api/runs/r1/goal", R"({"verb": "pause"})", "application/json",
                       {{"Origin", "http://evil.example"}});
  EXPECT_EQ(s2, 403) << b2;
  std::string big = R"({"verb": "edit", "text": ")" + std::string(10000, 'x') + "\"}";
  auto [s3, b3] = post("/api/runs/r1/goal", big);
  EXPECT_EQ(s3, 413) << b3;
  EXPECT_NE(b3.value("error", "").find("larger than the limit"), std::string::npos) << b3;
  EXPECT_EQ(goal_events(), before);
  auto [s4, b4] = get("/api/runs", {{"Host", "evil.example:80"}});
  EXPECT_EQ(s4, 403) << "a loopback server refuses another Host (DNS rebinding): " << b4;
  // The server is still up.
  EXPECT_EQ(get("/api/runs").first, 200);
}

TEST_F(Server, ATokenIsRequiredWhenGivenAndComparedExactly) {
  stop();
  start("127.0.0.1", "s3cret-token");
  EXPECT_EQ(get("/api/runs").first, 401);
  EXPECT_EQ(get("/api/runs", {{"Authorization", "Bearer wrong"}}).first, 403);
  EXPECT_EQ(get("/api/runs", {{"Authorization", "Bearer s3cret-toke"}}).first, 403);
  EXPECT_EQ(get("/api/runs", {{"Authorization", "Bearer s3cret-token"}}).first, 200);
  EXPECT_EQ(get("/api/runs?token=s3cret-token").first, 200);
  EXPECT_EQ(get("/").first, 200) << "the page itself holds no data";
  size_t before = goal_events();
  EXPECT_EQ(post("/api/runs/r1/goal", R"({"verb": "pause"})").first, 401);
  EXPECT_EQ(goal_events(), before);
}

TEST_F(Server, AnyOtherAddressGetsAGeneratedToken) {
  stop();
  start("0.0.0.0", "");
  ASSERT_EQ(dashboard_->token().size(), 64u);
  EXPECT_NE(dashboard_->url().find("?token=" + dashboard_->token()), std::string::npos);
  EXPECT_EQ(get("/api/runs").first, 401);
  EXPECT_EQ(get("/api/runs", {{"Authorization", "Bearer " + dashboard_->token()}}).first, 200);
}

TEST_F(Server, TheStreamSendsAnUpdateWhenTheRunAppends) {
  log_.eval(1.0);
  int64_t last = log_.store().last_seq();
  std::string received;
  std::atomic<bool> seen_eval{false};
  std::thread reader([&] {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(20, 0);
    c.Get("/api/runs/r1/stream?after=" + std::to_string(last), [&](const char* data, size_t n) {
      received.append(data, n);
      if (received.find("\"kind\":\"ok\"") != std::string::npos) seen_eval = true;
      return !seen_eval;
    });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  log_.write("value = 8\n");
  log_.eval(8.0);
  reader.join();
  EXPECT_TRUE(seen_eval) << received;
  EXPECT_NE(received.find("event: update"), std::string::npos);
}

}  // namespace
}  // namespace marathon::serve
