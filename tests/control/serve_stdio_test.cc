// `marathon serve --stdio` through the real binary: a client drives a live run (a real runner on a
// scripted model) with goal verbs and a stop, following its log as notifications; and every kind
// of bad input gets its JSON-RPC error (or a clean exit) with the log left as it was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/log_export.h"
#include "goal/task_spec.h"
#include "loop/loop_test_support.h"
#include "loop/run_setup.h"
#include "loop/tiny_script.h"
#include "stdio_child.h"

namespace marathon {
namespace {

namespace mt = marathon::testing;
using ::testing::HasSubstr;

// A client of the control protocol: requests with increasing ids; notifications that arrive
// meanwhile are kept in order.
class Client {
 public:
  Client(const std::vector<std::string>& run_dirs, const fs::path& err_log)
      : child_(argv(run_dirs), err_log) {}

  json request(const std::string& method, json params = nullptr, double timeout_s = 30) {
    json m = {{"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method}};
    if (!params.is_null()) m["params"] = std::move(params);
    EXPECT_TRUE(child_.send(m)) << method;
    return reply_to(id_, timeout_s);
  }
  // The reply with this id; notifications before it are kept.
  json reply_to(const json& id, double timeout_s = 30) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      std::optional<json> j = child_.read_json(1);
      if (!j) continue;
      if (j->contains("method")) {
        notifications.push_back(*j);
        continue;
      }
      if ((*j)["id"] == id) return *j;
      ADD_FAILURE() << "unexpected reply: " << j->dump();
    }
    ADD_FAILURE() << "no reply to id " << id.dump();
    return json::object();
  }
  // The next line as JSON (any message).
  json next(double timeout_s = 30) {
    std::optional<json> j = child_.read_json(timeout_s);
    return j ? *j : json(nullptr);
  }
  // Reads notifications until one not looked at by an earlier call satisfies `pred` (true), or
  // the time is up (false).
  bool wait_for_record(const std::function<bool(const json& record)>& pred, double timeout_s) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      while (scanned_ < notifications.size()) {
        const json& n = notifications[scanned_++];
        if (n["method"] == "log/event" && pred(n["params"]["record"])) return true;
      }
      if (std::chrono::steady_clock::now() >= deadline) return false;
      if (std::optional<json> j = child_.read_json(0.5)) notifications.push_back(*j);
    }
  }

  mt::StdioChild& child() { return child_; }
  std::vector<json> notifications;

 private:
  static std::vector<std::string> argv(const std::vector<std::string>& run_dirs) {
    std::vector<std::string> a{MARATHON_BINARY, "serve", "--stdio"};
    a.insert(a.end(), run_dirs.begin(), run_dirs.end());
    return a;
  }
  mt::StdioChild child_;
  int64_t id_ = 0;
  size_t scanned_ = 0;
};

int64_t error_code(const json& reply) { return reply["error"].value("code", int64_t{0}); }

// The last events of a run, one per line (for failure messages).
std::string log_tail(const fs::path& run, size_t n = 12) {
  std::vector<Event> events = mt::load_events(run);
  std::string out = "\nlast events:\n";
  for (size_t i = events.size() > n ? events.size() - n : 0; i < events.size(); ++i) {
    out += std::to_string(events[i].seq) + " " + events[i].type + " " +
           events[i].payload.dump().substr(0, 200) + "\n";
  }
  return out;
}

std::string last_notes(const Client& c, size_t n = 4) {
  std::string out = "\nlast notifications:\n";
  const auto& v = c.notifications;
  for (size_t i = v.size() > n ? v.size() - n : 0; i < v.size(); ++i) {
    out += v[i].dump().substr(0, 300) + "\n";
  }
  return out;
}

bool is_type(const json& record, const std::string& type, const std::string& reason = "") {
  return record["payload_type"] == type &&
         (reason.empty() || record["payload"].value("reason", "") == reason);
}

// A scripted model that never stops: a note per turn, a little slowly, and the objective it was
// shown (the last user-visible goal text) recorded.
mt::ScriptedLlmServer endless_notes() {
  return mt::ScriptedLlmServer([](size_t i, const json&) {
    ScriptedResponse r = mt::openai_tool_calls(
        json::array({tc("note", {{"kind", "finding"}, {"text", "step " + std::to_string(i)}})}));
    r.delay_s = 0.02;
    return r;
  });
}

TEST(ServeStdio, DrivesALiveRunPauseEditResumeStopWithTheLogFollowedInOrder) {
  mt::TempDir dir("serve-live");
  fs::path run = dir / "run";
  mt::ScriptedLlmServer model = endless_notes();
  std::vector<std::string> run_args = tiny_run_args(run, model.base_url());
  run_args.insert(run_args.end(), {"--max-tool-calls", "100000"});
  run_args.insert(run_args.begin(), MARATHON_BINARY);
  mt::Child runner(run_args, {}, dir / "runner.log");
  // The run is under way: some tool calls logged.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < until &&
         (!fs::exists(run / "events.db") ||
          mt::events_of_type(mt::load_events(run), events::ToolFinished::kType).size() < 3)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(mt::events_of_type(mt::load_events(run), events::ToolFinished::kType).size(), 3u)
      << mt::read_text(dir / "runner.log");

  Client c({run.string()}, dir / "serve.log");
  json init = c.request("initialize", {{"protocolVersion", "1"}});
  ASSERT_EQ(init["result"]["protocolVersion"], "1") << init.dump();
  EXPECT_THAT(init["result"]["capabilities"]["methods"].dump(), HasSubstr("goal/edit"));

  json sub = c.request("log/subscribe");
  ASSERT_TRUE(sub.contains("result")) << sub.dump();
  int64_t first = sub["result"]["next_seq"];

  json paused = c.request("goal/pause", {{"note", "hold on"}});
  ASSERT_TRUE(paused.contains("result")) << paused.dump();
  EXPECT_EQ(paused["result"]["record"]["payload_type"], "goal.changed");
  ASSERT_TRUE(
      c.wait_for_record([](const json& r) { return is_type(r, "run.paused", "goal_paused"); }, 60))
      << "the runner did not pause on goal/pause";
  std::optional<int> rc = runner.wait_for(60);
  ASSERT_TRUE(rc) << "the paused runner did not exit";
  EXPECT_EQ(*rc, 0) << mt::read_text(dir / "runner.log");

  json edited = c.request("goal/edit", {{"objective", "make the value at least 777"}});
  EXPECT_EQ(edited["result"]["goal"]["objective"], "make the value at least 777") << edited.dump();
  EXPECT_EQ(edited["result"]["goal"]["status"], "paused") << "edit keeps the status";
  json resumed = c.request("goal/resume");
  EXPECT_EQ(resumed["result"]["goal"]["status"], "active") << resumed.dump();
  EXPECT_EQ(resumed["result"]["run_state"], "paused");

  size_t requests_before = model.request_count();
  mt::Child runner2({MARATHON_BINARY, "resume", run.string(), "--quiet"}, {}, dir / "runner2.log");
  ASSERT_TRUE(c.wait_for_record([](const json& r) { return is_type(r, "tool.finished"); }, 60))
      << mt::read_text(dir / "runner2.log") << log_tail(run) << last_notes(c);

  json stop = c.request("run/stop", {{"reason", "the test is over"}});
  ASSERT_TRUE(stop.contains("result")) << stop.dump();
  EXPECT_EQ(stop["result"]["record"]["payload_type"], "run.stop_requested");
  ASSERT_TRUE(
      c.wait_for_record([](const json& r) { return is_type(r, "run.paused", "stopped"); }, 60))
      << "the runner did not stop on run/stop";
  rc = runner2.wait_for(60);
  ASSERT_TRUE(rc) << "the stopped runner did not exit";
  EXPECT_EQ(*rc, 0) << mt::read_text(dir / "runner2.log");

  // The resumed runner's prompts carried the edited goal.
  std::vector<mt::RecordedRequest> reqs = model.requests();
  ASSERT_GT(reqs.size(), requests_before);
  EXPECT_THAT(reqs.back().raw, HasSubstr("make the value at least 777"));

  // Every event from the subscription point on arrived once, in order, as the msp export has it.
  c.child().close_stdin();
  for (json n = c.next(5); !n.is_null(); n = c.next(5)) c.notifications.push_back(n);
  std::optional<int> served = c.child().wait_for(30);
  ASSERT_TRUE(served) << "serve --stdio did not exit when its input closed";
  EXPECT_EQ(*served, 0) << mt::read_text(dir / "serve.log");

  std::vector<Event> events = mt::load_events(run);
  std::string run_id = mt::load_state(run).run_id;
  std::vector<json> got;
  for (const json& n : c.notifications) {
    if (n["method"] == "log/event") got.push_back(n["params"]["record"]);
  }
  std::vector<json> want;
  for (const Event& e : events) {
    if (e.seq >= first) want.push_back(to_msp(e, run_id));
  }
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "record " << i;

  // The story, in log order.
  std::vector<std::string> story;
  for (const json& r : got) {
    std::string t = r["payload_type"];
    if (t == "goal.changed") story.push_back(t + ":" + r["payload"].value("verb", ""));
    if (t == "run.paused") story.push_back(t + ":" + r["payload"].value("reason", ""));
    if (t == "run.resumed" || t == "run.stop_requested") story.push_back(t);
  }
  EXPECT_THAT(story,
              ::testing::ElementsAre("goal.changed:pause", "run.paused:goal_paused",
                                     "goal.changed:edit", "goal.changed:resume", "run.resumed",
                                     "run.stop_requested", "run.paused:stopped"));
}

class ServeStdioBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    NewRunOptions o;
    o.run_dir = run_;
    o.policy = "search";
    create_run(load_task(mt::tiny_task()), o);
    before_ = mt::load_events(run_).size();
  }
  mt::TempDir tmp_{"serve-bad"};
  fs::path run_ = tmp_ / "run";
  size_t before_ = 0;
};

TEST_F(ServeStdioBadInput, EachGetsItsErrorAndTheLogIsUntouched) {
  Client c({run_.string()}, tmp_ / "serve.log");
  auto raw = [&](const std::string& line) {
    EXPECT_TRUE(c.child().write_raw(line + "\n"));
    return c.next();
  };
  // Before initialize.
  json r = c.request("run/status");
  EXPECT_EQ(error_code(r), -32001) << r.dump();
  ASSERT_TRUE(c.request("initialize").contains("result"));

  r = raw("this is not JSON");
  EXPECT_EQ(error_code(r), -32700) << r.dump();
  EXPECT_TRUE(r["id"].is_null());
  r = raw("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"run/list\"");  // cut short
  EXPECT_EQ(error_code(r), -32700) << r.dump();
  r = raw("\"\xff\xfe\"");  // not UTF-8
  EXPECT_EQ(error_code(r), -32700) << r.dump();
  r = raw("[]");
  EXPECT_EQ(error_code(r), -32600) << r.dump();
  r = raw("42");
  EXPECT_EQ(error_code(r), -32600) << r.dump();
  r = raw(R"({"jsonrpc":"1.0","id":7,"method":"run/list"})");
  EXPECT_EQ(error_code(r), -32600) << r.dump();
  EXPECT_EQ(r["id"], 7);
  r = raw(R"({"jsonrpc":"2.0","id":{"no":1},"method":"run/list"})");
  EXPECT_EQ(error_code(r), -32600) << r.dump();
  r = raw(R"({"jsonrpc":"2.0","id":8,"method":17})");
  EXPECT_EQ(error_code(r), -32600) << r.dump();

  r = c.request("no/such/method");
  EXPECT_EQ(error_code(r), -32601) << r.dump();
  r = c.request("goal/set", json::object());
  EXPECT_EQ(error_code(r), -32602) << r.dump();
  EXPECT_THAT(r.dump(), HasSubstr("objective"));
  r = c.request("goal/set", {{"objective", 5}});
  EXPECT_EQ(error_code(r), -32602) << r.dump();
  r = c.request("goal/set", {{"objective", ""}});
  EXPECT_EQ(error_code(r), -32602) << r.dump();
  r = c.request("goal/pause", {{"bogus", true}});
  EXPECT_EQ(error_code(r), -32602) << r.dump();
  r = c.request("goal/pause", json::array({"positional"}));
  EXPECT_EQ(error_code(r), -32602) << r.dump();
  r = c.request("log/page", {{"limit", 0}});
  EXPECT_EQ(error_code(r), -32602) << r.dump();
  r = c.request("log/page", {{"from_seq", 18446744073709551615ull}});
  EXPECT_EQ(error_code(r), -32602) << r.dump();
  r = c.request("log/unsubscribe", {{"subscription", "sub-404"}});
  EXPECT_EQ(error_code(r), -32602) << r.dump();
  r = c.request("goal/pause", {{"run", (tmp_ / "elsewhere").string()}});
  EXPECT_EQ(error_code(r), -32002) << r.dump();
  r = c.request("session/compact", {{"now", "yes"}});
  EXPECT_EQ(error_code(r), -32602) << r.dump();

  // Notifications get no reply, known or not; a batch gets one array of the replies it needs.
  EXPECT_TRUE(c.child().write_raw(R"({"jsonrpc":"2.0","method":"no/such"})"
                                  "\n"));
  r = raw(R"([{"jsonrpc":"2.0","id":"a","method":"run/list"},{"jsonrpc":"2.0","method":"x"},1])");
  ASSERT_TRUE(r.is_array()) << r.dump();
  ASSERT_EQ(r.size(), 2u) << r.dump();
  EXPECT_EQ(r[0]["id"], "a");
  EXPECT_TRUE(r[0].contains("result"));
  EXPECT_EQ(error_code(r[1]), -32600);

  // A line over the limit is dropped with an error, and the server reads on.
  r = raw(std::string(17u << 20, 'x'));
  EXPECT_EQ(error_code(r), -32700) << r.dump().substr(0, 200);
  r = c.request("log/page", {{"limit", 2}});
  ASSERT_EQ(r["result"]["records"].size(), 2u) << r.dump().substr(0, 400);
  EXPECT_EQ(r["result"]["records"][0]["payload_type"], "run.created");
  EXPECT_EQ(r["result"]["next_seq"], 3);

  // A stopped run: stop is a no-op; nothing was appended by anything above.
  r = c.request("run/stop");
  EXPECT_EQ(r["result"]["already_stopped"], false) << "a created run that never ran is open";
  EXPECT_EQ(mt::load_events(run_).size(), before_ + 1);

  // Input ends in the middle of a request: it is not executed, the server exits cleanly.
  EXPECT_TRUE(c.child().write_raw(R"({"jsonrpc":"2.0","id":99,"method":"goal/clear")"));
  c.child().close_stdin();
  r = c.next();
  EXPECT_EQ(error_code(r), -32700) << r.dump();
  std::optional<int> rc = c.child().wait_for(30);
  ASSERT_TRUE(rc) << "serve --stdio did not exit at the end of its input";
  EXPECT_EQ(*rc, 0) << mt::read_text(tmp_ / "serve.log");
  EXPECT_EQ(mt::load_state(run_).goal.status, marathon::GoalStatus::kActive);
  EXPECT_EQ(mt::load_events(run_).size(), before_ + 1);
}

TEST_F(ServeStdioBadInput, AFinishedRunRefusesStopAndAMissingRunDirRefusesToServe) {
  Client c({run_.string()}, tmp_ / "serve.log");
  ASSERT_TRUE(c.request("initialize").contains("result"));
  json r = c.request("goal/clear");
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"]["goal"]["status"], "cleared");
  // The runner finishes a cleared goal; here the test writes what it would.
  {
    auto store = EventStore::open((run_ / "events.db").string(), EventStore::Mode::kOpen);
    store->append({events::RunFinished::kType, {{"reason", "goal_cleared"}, {"summary", ""}}});
  }
  r = c.request("run/stop");
  EXPECT_EQ(error_code(r), -32004) << r.dump();
  EXPECT_THAT(r.dump(), HasSubstr("finished"));
  r = c.request("run/list");
  EXPECT_EQ(r["result"]["runs"][0]["state"], "finished") << r.dump();
  c.child().close_stdin();
  EXPECT_EQ(c.child().wait_for(30).value_or(-1), 0);

  mt::StdioChild missing({MARATHON_BINARY, "serve", "--stdio", (tmp_ / "nope").string()},
                         tmp_ / "missing.log");
  EXPECT_EQ(missing.wait_for(30).value_or(-1), 2);
  EXPECT_THAT(mt::read_text(tmp_ / "missing.log"), HasSubstr("nope"));
}

}  // namespace
}  // namespace marathon
