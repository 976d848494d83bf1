// A provider that lies about usage or never answers, and a model that answers with far more than
// the window holds: the real `marathon` binary against scripted servers on 127.0.0.1.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <regex>
#include <string>

#include "core/event_store.h"
#include "goal/task_spec.h"
#include "loop/loop_test_support.h"
#include "loop/run_setup.h"
#include "scripted_llm_server.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::events_of_type;
using testing::load_events;
using testing::load_state;
using testing::read_text;
using testing::run_binary;
using testing::ScriptedLlmServer;
using testing::ScriptedResponse;
using testing::TempDir;

const std::map<std::string, std::string> kEnv{{"OPENAI_API_KEY", "scripted-test-key"}};

json call(const std::string& name, json args) {
  return {{"name", name}, {"arguments", std::move(args)}};
}

json note(int i) {
  return call("note", {{"kind", "finding"}, {"text", "finding " + std::to_string(i)}});
}

bool is_summary_request(const json& req) {
  const json& m = req.value("messages", json::array());
  return !m.empty() && m[0].value("content", "").rfind("You compact", 0) == 0;
}

ScriptedResponse with_usage(ScriptedResponse r, json usage) {
  r.body["usage"] = std::move(usage);
  return r;
}

// `marathon run` on the tiny task with the llm policy against `url`, priced as gpt-4o
// ($2.50 / $10.00 per Mtok).
std::vector<std::string> run_args(const fs::path& run, const std::string& url,
                                  std::vector<std::string> extra = {}) {
  std::vector<std::string> a{"run",        testing::tiny_task().string(),
                             "--run-dir",  run.string(),
                             "--policy",   "llm",
                             "--model",    "openai:gpt-4o",
                             "--base-url", url,
                             "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::string finished_summary(const std::vector<Event>& events) {
  for (const Event& e : events_of_type(events, events::RunFinished::kType)) return e.payload.dump();
  return "";
}

// --- usage a provider lies about ------------------------------------------------------------

// The first reply reports `lie` as its usage; every later one an honest 100k prompt tokens (about
// $0.26 a call at gpt-4o prices). With --max-cost 1 the run must stop on its cost budget after a
// handful of calls, however the lie was meant to lower or wrap the recorded spend.
void expect_budget_survives(const json& lie, const std::string& tag) {
  TempDir dir("lying-usage-" + tag);
  ScriptedLlmServer server([&](size_t index, const json&) {
    ScriptedResponse r = testing::openai_tool_calls(json::array({note(static_cast<int>(index))}));
    if (index == 0) return with_usage(r, lie);
    return with_usage(r, {{"prompt_tokens", 100000}, {"completion_tokens", 1000}});
  });
  fs::path run = dir / "run";
  int rc =
      run_binary(run_args(run, server.base_url(),
                          {"--max-cost", "1", "--max-tokens", "2000000", "--max-tool-calls", "40"}),
                 kEnv, dir / "log", 300);
  ASSERT_EQ(rc, 0) << read_text(dir / "log");
  std::vector<Event> events = load_events(run);
  State s = fold(events);
  EXPECT_EQ(s.finish_reason, "budget") << finished_summary(events);
  EXPECT_NE(finished_summary(events).find("cost budget used up"), std::string::npos)
      << finished_summary(events);
  EXPECT_LT(s.used.tool_calls, 10) << "the lie kept the run going past its cost budget";
  EXPECT_GE(s.used.cost_usd, 1.0);
  EXPECT_GE(s.used.prompt_tokens, 0);
  EXPECT_GE(s.used.completion_tokens, 0);
  std::vector<Event> rejected = events_of_type(events, "llm.usage_rejected");
  ASSERT_EQ(rejected.size(), 1u) << "the rejected usage must be logged as a warning";
  EXPECT_EQ(rejected[0].payload["reported"], lie);
  EXPECT_FALSE(rejected[0].payload["problems"].empty());
  // Spend never went down along the way: the cost after each response is at least the one before.
  State partial;
  double last_cost = 0;
  for (const Event& e : events) {
    apply(partial, e);
    EXPECT_GE(partial.used.cost_usd, last_cost) << "seq " << e.seq;
    last_cost = partial.used.cost_usd;
  }
}

TEST(LyingProvider, NegativeUsageCannotDisableMaxCost) {
  expect_budget_survives({{"prompt_tokens", -100000000000LL}, {"completion_tokens", 20}},
                         "negative");
}

TEST(LyingProvider, OverflowingUsageCannotWrapTheSpendNegative) {
  // 1e30 does not fit an int64 (it used to become INT64_MIN); 2^64-1 read as int64 is -1.
  expect_budget_survives({{"prompt_tokens", 1e30}, {"completion_tokens", 18446744073709551615ULL}},
                         "overflow");
}

// --- a reply too large for any window ---------------------------------------------------------

constexpr size_t kWindowBytes = 200000;  // the server's "context window", in request bytes

ScriptedResponse context_error(size_t bytes) {
  return testing::error_response(
      400,
      "This model's maximum context length is 16000 tokens. However, your messages resulted in " +
          std::to_string(bytes) + " bytes. (context_length_exceeded)",
      {}, "invalid_request_error");
}

std::string words(size_t bytes) {
  static const char* kWords[] = {"tiling ", "vector ", "unroll ", "kernel ", "memory ",
                                 "shared ", "warp ",   "block ",  "cache ",  "score "};
  std::string s = "HEAD-OF-REPLY ";
  for (size_t i = 0; s.size() < bytes; ++i) s += kWords[(i * 7 + i / 3) % 10];
  return s + " TAIL-OF-REPLY";
}

struct WindowedServer {
  std::atomic<int> rejected{0};
  std::atomic<size_t> largest{0};
  std::function<ScriptedResponse(const json&)> answer;
  ScriptedLlmServer server{[this](size_t, const json& req) {
    const size_t bytes = req.dump().size();
    if (bytes > largest) largest = bytes;
    if (bytes > kWindowBytes) {
      ++rejected;
      return context_error(bytes);
    }
    if (is_summary_request(req)) {
      return testing::openai_text("Summary: a very long reply was cut; findings were noted.");
    }
    return answer(req);
  }};
};

TEST(HugeReply, TwoMegabyteReplyAgainstAnEnforcedWindowIsCutAndTheRunContinues) {
  TempDir dir("huge-reply");
  const std::string huge = words(2 << 20);
  std::string recalled_seq;
  WindowedServer w;
  w.answer = [&](const json& req) {
    const size_t turn = ScriptedLlmServer::assistant_turns(req);
    if (turn == 0) return testing::openai_tool_calls(json::array({note(0)}), huge);
    if (turn == 1) {
      // The model reads the note on the cut and pages through its own reply.
      std::smatch m;
      const std::string text = req.dump();
      if (std::regex_search(text, m, std::regex("recall\\(seq=(\\d+)\\)"))) recalled_seq = m[1];
      return testing::openai_tool_calls(json::array(
          {call("recall", {{"seq", recalled_seq.empty() ? 1 : std::stoi(recalled_seq)}})}));
    }
    return testing::openai_tool_calls(json::array({call("finish", {{"summary", "done"}})}));
  };
  fs::path run = dir / "run";
  int rc = run_binary(run_args(run, w.server.base_url(), {"--context-window", "16000"}), kEnv,
                      dir / "log", 300);
  ASSERT_EQ(rc, 0) << read_text(dir / "log");
  std::vector<Event> events = load_events(run);
  State s = fold(events);
  EXPECT_EQ(s.finish_reason, "finish") << finished_summary(events);
  EXPECT_EQ(w.rejected, 0) << "a request above the window was sent (largest " << w.largest
                           << " bytes)";
  EXPECT_GE(w.server.request_count(), 3u) << "later requests must be accepted";
  std::printf("%zu requests, largest %zu bytes\n", w.server.request_count(), w.largest.load());

  std::vector<Event> cuts = events_of_type(events, "compaction.cut");
  ASSERT_EQ(cuts.size(), 1u) << "the cut must be a logged compaction step";
  int64_t reply_seq = 0;
  for (const Event& e : events_of_type(events, events::ModelResponse::kType)) {
    if (e.payload["message"].value("content", "").size() > 1000000) reply_seq = e.seq;
  }
  ASSERT_GT(reply_seq, 0) << "the whole reply stays in the log";
  EXPECT_EQ(cuts[0].payload["cuts"][0]["seq"], reply_seq);
  EXPECT_EQ(recalled_seq, std::to_string(reply_seq)) << "the prompt's note names the reply";
  bool paged = false;
  for (const Event& e : events_of_type(events, events::ToolFinished::kType)) {
    if (e.payload.value("name", "") != "recall") continue;
    const std::string out = e.payload.value("output", "");
    paged = out.find("the model's reply, bytes 0..") != std::string::npos &&
            out.find("HEAD-OF-REPLY") != std::string::npos;
  }
  EXPECT_TRUE(paged) << "recall pages through the reply that was cut";
}

TEST(HugeReply, AResumedRunOverTheWindowCompactsBeforeItSends) {
  TempDir dir("huge-resume");
  WindowedServer w;
  w.answer = [](const json&) {
    return testing::openai_tool_calls(json::array({call("finish", {{"summary", "done"}})}));
  };
  fs::path run = dir / "run";
  // A run stopped while a request was pending whose prompt holds a 2 MB reply: the log an older
  // runtime (or a kill) leaves behind.
  {
    TaskSpec task = load_task(testing::tiny_task());
    NewRunOptions o;
    o.run_dir = run;
    o.policy = "llm";
    o.model = "openai:gpt-4o";
    o.base_url = w.server.base_url();
    o.context_window = 16000;
    std::unique_ptr<EventStore> store = create_run(task, o);
    const json args = {{"kind", "finding"}, {"text", "long"}};
    store->append(
        {events::ModelRequest::kType,
         {{"turn", 1}, {"prompt_sha", "0"}, {"n_messages", 2}, {"tokens_estimate", 900}}});
    store->append(
        {events::ModelResponse::kType,
         {{"message",
           {{"content", words(2 << 20)},
            {"tool_calls",
             json::array({{{"id", "c1"}, {"name", "note"}, {"arguments", args.dump()}}})}}},
          {"usage", {{"prompt_tokens", 900}, {"completion_tokens", 600000}}},
          {"cost_usd", 0.0},
          {"provider", "openai"},
          {"model", "gpt-4o"},
          {"finish_reason", "tool_calls"}}});
    store->append(
        {events::ToolStarted::kType,
         {{"call_id", "c1"}, {"name", "note"}, {"arguments", args}, {"turn", 1}, {"index", 0}}});
    store->append({events::ToolFinished::kType,
                   {{"call_id", "c1"},
                    {"name", "note"},
                    {"ok", true},
                    {"output", "noted"},
                    {"elapsed_s", 0.0}}});
    store->append(
        {events::ModelRequest::kType,
         {{"turn", 1}, {"prompt_sha", "1"}, {"n_messages", 4}, {"tokens_estimate", 600000}}});
    store->append({events::RunPaused::kType, {{"reason", "interrupted"}, {"message", "test"}}});
  }
  int rc = run_binary({"resume", run.string(), "--quiet"}, kEnv, dir / "log", 300);
  ASSERT_EQ(rc, 0) << read_text(dir / "log");
  std::vector<Event> events = load_events(run);
  EXPECT_EQ(fold(events).finish_reason, "finish") << finished_summary(events);
  EXPECT_EQ(w.rejected, 0) << "the resumed run sent the pending prompt over the window (largest "
                           << w.largest << " bytes)";
  std::vector<Event> cuts = events_of_type(events, "compaction.cut");
  ASSERT_EQ(cuts.size(), 1u);
  // The prompt after the cut is logged as a new request, so the log says what was sent.
  bool request_after_cut = false;
  for (const Event& e : events_of_type(events, events::ModelRequest::kType)) {
    request_after_cut = request_after_cut || e.seq > cuts[0].seq;
  }
  EXPECT_TRUE(request_after_cut);
}

// --- a model connection that never answers ---------------------------------------------------

TEST(HungModel, SigtermEndsTheProcessWithinTwoSecondsAndTheRunResumes) {
  TempDir dir("hung-model");
  ScriptedLlmServer server([](size_t index, const json&) {
    if (index == 0) {
      ScriptedResponse r = testing::openai_text("never sent");
      r.delay_s = 3600;  // accepts the request and never answers
      return r;
    }
    return testing::openai_tool_calls(json::array({call("finish", {{"summary", "done"}})}));
  });
  fs::path run = dir / "run";
  std::vector<std::string> argv{MARATHON_BINARY};
  for (const std::string& a : run_args(run, server.base_url())) argv.push_back(a);
  Child child(argv, kEnv, dir / "log");
  for (int i = 0; i < 6000 && server.request_count() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(server.request_count(), 1u) << read_text(dir / "log");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // well inside the HTTP wait

  const auto t0 = std::chrono::steady_clock::now();
  child.signal(SIGTERM);
  std::optional<int> rc = child.wait_for(30);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(rc.has_value()) << "SIGTERM did not end a process waiting on a hung model";
  EXPECT_EQ(*rc, 130) << read_text(dir / "log");  // paused by a signal
  EXPECT_LT(took, 2.0) << "from SIGTERM to exit";
  std::printf("SIGTERM to exit: %.3f s\n", took);

  std::vector<Event> events = load_events(run);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type, events::RunPaused::kType);
  EXPECT_EQ(events.back().payload["reason"], "interrupted");
  EXPECT_TRUE(events_of_type(events, events::ModelResponse::kType).empty())
      << "an abandoned call is not a response: the request stays pending";

  int rc2 = run_binary({"resume", run.string(), "--quiet"}, kEnv, dir / "log", 120);
  ASSERT_EQ(rc2, 0) << read_text(dir / "log");
  events = load_events(run);
  EXPECT_EQ(fold(events).finish_reason, "finish");
  EXPECT_EQ(events_of_type(events, events::ModelRequest::kType).size(), 1u)
      << "resume sends the pending request again without logging a second one";
}

TEST(ModelTimeout, IsStoredInTheRunAndAResumeOverridesIt) {
  TempDir dir("model-timeout");
  ScriptedLlmServer server([](size_t index, const json&) {
    if (index == 0) return testing::error_response(401, "invalid key");  // the run pauses
    return testing::openai_tool_calls(json::array({call("finish", {{"summary", "done"}})}));
  });
  fs::path run = dir / "run";
  EXPECT_EQ(run_binary(run_args(run, server.base_url(), {"--model-timeout", "0"}), kEnv,
                       dir / "bad.log", 60),
            2);
  EXPECT_NE(read_text(dir / "bad.log").find("--model-timeout: must be > 0, got 0"),
            std::string::npos)
      << read_text(dir / "bad.log");
  EXPECT_FALSE(fs::exists(run / "events.db")) << "a bad flag creates no run";

  EXPECT_EQ(run_binary(run_args(run, server.base_url(), {"--model-timeout", "45"}), kEnv,
                       dir / "log", 60),
            1)
      << read_text(dir / "log");
  EXPECT_EQ(load_state(run).config.value("model_timeout_s", 0.0), 45.0);
  ASSERT_EQ(run_binary({"resume", run.string(), "--quiet", "--model-timeout", "7"}, kEnv,
                       dir / "log", 60),
            0)
      << read_text(dir / "log");
  State s = load_state(run);
  EXPECT_EQ(s.finish_reason, "finish");
  EXPECT_EQ(s.config.value("model_timeout_s", 0.0), 7.0);
}

TEST(ModelTimeout, AHungAttemptIsAbandonedAfterTheTimeout) {
  TempDir dir("model-timeout-hang");
  ScriptedLlmServer server([](size_t, const json&) {
    ScriptedResponse r = testing::openai_text("never sent");
    r.delay_s = 3600;
    return r;
  });
  fs::path run = dir / "run";
  std::vector<std::string> argv{MARATHON_BINARY};
  for (const std::string& a : run_args(run, server.base_url(), {"--model-timeout", "1"})) {
    argv.push_back(a);
  }
  Child child(argv, kEnv, dir / "log");
  bool retried = false;
  for (int i = 0; i < 300 && !retried; ++i) {  // up to 30 s; the old fixed wait was 600 s
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    retried = read_text(dir / "log").find("retry 1/") != std::string::npos;
  }
  EXPECT_TRUE(retried) << read_text(dir / "log");
  EXPECT_GE(server.request_count(), 1u);
  child.signal(SIGTERM);
  std::optional<int> rc = child.wait_for(30);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 130) << read_text(dir / "log");  // paused by a signal
}

}  // namespace
}  // namespace marathon
