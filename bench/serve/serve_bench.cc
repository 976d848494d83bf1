// bench_serve: the dashboard's latency on a long run.
//   bench_serve [--events N] [--seconds S] [--dir DIR]
// (with --dir, a log already built there by an earlier run is reused)
// Builds a run of about N events (default 100,000) shaped like a real one (per step a model
// request and response, a tool call, every 3rd step a file write, every 5th an evaluation of the
// files as they are, a profile every 40th, a note every 7th, a goal change and a compaction now
// and then), with fold checkpoints written as a runner writes them. Then, each time on a fresh
// server:
//   - the Runs page's first paint: GET / and its three files, then GET /api/runs;
//   - one run's first paint: GET /api/runs/ID (the charts and the attempts) and its newest events,
//     cold (asked at once: the request waits for the first fold of the whole log) and warm (asked
//     once the server's start-up fold of every run is done, as when a page is opened a few
//     seconds after `marathon serve`).
// Then, while a writer appends a step every 20 ms to the long run (a busy runner) for S seconds
// (default 20), clients use the API as people at their pages do and five pages follow the run's
// live stream; it prints each endpoint's latency percentiles and how long an appended evaluation
// took to reach a page.
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/checkpoint.h"
#include "core/event_store.h"
#include "core/fold.h"
#include "core/load_state.h"
#include "core/run_dir.h"
#include "core/workspace_snapshot.h"
#include "serve/run_json.h"
#include "serve/server.h"

namespace fs = std::filesystem;
using marathon::EventStore;
using marathon::json;
using marathon::NewEvent;
namespace events = marathon::events;
using Clock = std::chrono::steady_clock;

namespace {

double since_ms(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string text(std::mt19937_64& r, size_t n) {
  static const char kWords[][12] = {"the ",  "kernel ", "tile ",   "load ", "store ",
                                    "warp ", "block ",  "shared ", "= ",    "for ",
                                    "(i ",   "+= ",     "acc;\n"};
  std::string s;
  while (s.size() < n) s += kWords[r() % (sizeof kWords / sizeof kWords[0])];
  s.resize(n);
  return s;
}

NewEvent make(const char* type, json payload) {
  NewEvent e;
  e.type = type;
  e.payload = std::move(payload);
  return e;
}

// A run's log, appended step by step with its state folded alongside (for the checkpoints).
class Writer {
 public:
  // Carries on the run in `run_dir` (as a resumed runner does).
  Writer(const fs::path& run_dir, bool existing) : r_(7) {
    store_ = EventStore::open((run_dir / "events.db").string(), EventStore::Mode::kOpen);
    state_ = marathon::load_state(*store_);
    files_ = marathon::workspace_at(*store_, state_.last_seq);
    candidate_ = state_.best_candidate;
    step_ = state_.last_seq;  // new call ids
    (void)existing;
  }
  explicit Writer(const fs::path& run_dir) : r_(42) {
    marathon::RunDir d = marathon::create_run_dir(run_dir);
    store_ = EventStore::open(d.events_db().string(), EventStore::Mode::kCreate);
    std::string sha = store_->put_blob("starter kernel\n");
    files_["kernel.py"] = sha;
    append({make(events::RunCreated::kType,
                 {{"run_id", "run-bench"},
                  {"task", {{"name", "kda"}}},
                  {"goal",
                   {{"objective", "beat FLA"},
                    {"metric", "speedup"},
                    {"direction", "max"},
                    {"target", 3.0}}},
                  {"budget", {{"max_tool_calls", 100000}, {"max_wall_s", 86400}}},
                  {"config", {{"policy", "llm"}}}}),
            make(events::WorkspaceWritten::kType,
                 {{"path", "kernel.py"}, {"sha", sha}, {"size", 15}, {"source", "starter"}})});
  }

  int64_t last_seq() const { return state_.last_seq; }
  const std::string& candidate() const { return candidate_; }

  void step() {
    std::vector<NewEvent> out;
    int64_t i = step_++;
    std::string call = "call_" + std::to_string(i);
    std::string tool = i % 40 == 39 ? "profile" : i % 5 == 4 ? "evaluate" : "write_file";
    out.push_back(make(events::ModelRequest::kType, {{"turn", 1 + i / 50},
                                                     {"prompt_sha", marathon::sha256_hex(call)},
                                                     {"n_messages", 20 + i % 40},
                                                     {"tokens_estimate", 12000 + r_() % 8000}}));
    json args = {{"path", "kernel.py"}, {"content", text(r_, 400)}};
    out.push_back(
        make(events::ModelResponse::kType,
             {{"message",
               {{"content", text(r_, 800 + r_() % 800)},
                {"tool_calls",
                 json::array({{{"id", call}, {"name", tool}, {"arguments", args.dump()}}})}}},
              {"usage",
               {{"prompt_tokens", 15000 + r_() % 5000}, {"completion_tokens", 300 + r_() % 500}}},
              {"cost_usd", 0.01},
              {"provider", "openai"},
              {"model", "gpt-4o"},
              {"finish_reason", "tool_calls"}}));
    out.push_back(
        make(events::ToolStarted::kType, {{"call_id", call}, {"name", tool}, {"arguments", args}}));
    if (i % 3 == 0) {
      std::string bytes = text(r_, 4000) + std::to_string(i);
      std::string sha = store_->put_blob(bytes);
      files_["kernel.py"] = sha;
      out.push_back(make(events::WorkspaceWritten::kType,
                         {{"path", "kernel.py"}, {"sha", sha}, {"size", bytes.size()}}));
    }
    out.push_back(make(events::ToolFinished::kType, {{"call_id", call},
                                                     {"name", tool},
                                                     {"ok", true},
                                                     {"output", text(r_, 200 + r_() % 1800)},
                                                     {"elapsed_s", 0.8}}));
    if (tool == "evaluate") {
      candidate_ = marathon::candidate_hash(files_);
      out.push_back(make(
          events::EvalFinished::kType,
          {{"candidate", candidate_},
           {"cache_key", marathon::sha256_hex("k" + std::to_string(i))},
           {"cached", false},
           {"status", i % 50 == 4 ? "timeout" : "ok"},
           {"result",
            {{"correct", r_() % 4 != 0},
             {"score", 1.0 + double(r_() % 1000) / 500 + double(i) / 50000},
             {"metrics", {{"speedup", 1.5}, {"ms", 0.42}, {"bw_frac", 0.61}}},
             {"details", json::array({{{"shape", "B1 T8192"}, {"ms", 0.4}}})},
             {"violations", i % 30 == 9 ? json::array({"reads the reference"}) : json::array()},
             {"log", text(r_, 300)}}},
           {"elapsed_s", 12.0},
           {"gpu_s", 9.5},
           {"strategy", text(r_, 120)}}));
    }
    if (i % 7 == 0)
      out.push_back(
          make(events::LedgerNoted::kType, {{"kind", "finding"}, {"text", text(r_, 150)}}));
    if (i % 2500 == 1000) {
      out.push_back(make(events::GoalChanged::kType,
                         {{"verb", "edit"}, {"objective", "beat FLA by " + std::to_string(i)}}));
    }
    if (i % 3000 == 2000) {
      out.push_back(make(events::CompactionInstalled::kType, {{"trigger", "auto"},
                                                              {"outcome", "compacted"},
                                                              {"source", "structural"},
                                                              {"summary", text(r_, 2000)},
                                                              {"summarized_through", last_seq()},
                                                              {"tokens_before", 90000},
                                                              {"tokens_after", 20000}}));
    }
    append(out);
  }

 private:
  void append(const std::vector<NewEvent>& batch) {
    for (const auto& e : store_->append_batch(batch)) marathon::apply(state_, e);
    marathon::maybe_write_checkpoint(*store_, state_);
  }
  std::unique_ptr<EventStore> store_;
  marathon::State state_;
  marathon::WorkspaceFiles files_;
  std::string candidate_;
  std::mt19937_64 r_;
  int64_t step_ = 0;
};

struct Server {
  explicit Server(const fs::path& runs) {
    marathon::serve::ServeOptions o;
    o.runs_dir = runs;
    o.port = 0;
    dashboard = std::make_unique<marathon::serve::Dashboard>(o);
    port = dashboard->bind();
    thread = std::thread([this] { dashboard->serve(); });
  }
  ~Server() {
    dashboard->stop();
    thread.join();
  }
  std::unique_ptr<marathon::serve::Dashboard> dashboard;
  std::thread thread;
  int port = 0;
};

// GET path; milliseconds, or -1 when the answer was not 200.
double timed_get(httplib::Client& c, const std::string& path, size_t* bytes = nullptr) {
  auto t0 = Clock::now();
  auto r = c.Get(path);
  double ms = since_ms(t0);
  if (!r || r->status != 200) {
    std::fprintf(stderr, "GET %s: %d\n", path.c_str(), r ? r->status : 0);
    return -1;
  }
  if (bytes) *bytes = r->body.size();
  return ms;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * double(v.size() - 1) + 0.5));
  return v[i];
}

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

}  // namespace

int main(int argc, char** argv) {
  int64_t n_events = 100000;
  double seconds = 20;
  fs::path dir;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--events") && i + 1 < argc) n_events = std::atoll(argv[++i]);
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = std::atof(argv[++i]);
    if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
  }
  bool own_dir = dir.empty();
  if (own_dir)
    dir = fs::temp_directory_path() / ("marathon-bench-serve-" + std::to_string(::getpid()));
  fs::path base = dir / ("base-" + std::to_string(n_events));
  if (!fs::exists(base / "done")) {
    fs::remove_all(base);
    fs::create_directories(base);
    auto t_build = Clock::now();
    {
      Writer w(base / "long");
      while (w.last_seq() < n_events) w.step();
      std::printf("built a log of %lld events in %.1f s\n", static_cast<long long>(w.last_seq()),
                  since_ms(t_build) / 1e3);
    }
    std::ofstream(base / "done") << "ok\n";
  }
  // Each run of the bench measures a copy of the same log.
  fs::remove_all(dir / "runs");
  fs::create_directories(dir / "runs" / "long");
  fs::copy_file(base / "long" / "events.db", dir / "runs" / "long" / "events.db");
  std::printf("| measurement | value |\n|---|---|\n");
  {
    auto store =
        EventStore::open((dir / "runs/long/events.db").string(), EventStore::Mode::kReadOnly);
    std::printf("| log | %lld events, %.1f MB |\n", static_cast<long long>(store->last_seq()),
                double(fs::file_size(dir / "runs/long/events.db")) / 1e6);
  }

  {  // The parts of one run's first paint, in this thread.
    auto t0 = Clock::now();
    marathon::serve::RunView v(dir / "runs/long", marathon::serve::RunView::Fold::kSeries);
    double fold_ms = since_ms(t0);
    std::vector<double> build;
    size_t bytes = 0;
    for (int k = 0; k < 5; ++k) {
      auto t1 = Clock::now();
      bytes = marathon::serve::run_detail("long", v, marathon::serve::RunPhase::kRunning, 0).size();
      build.push_back(since_ms(t1));
    }
    std::printf("| one run: open + fold of every event with the series | %.0f ms |\n", fold_ms);
    std::printf(
        "| one run: /api/runs/ID's JSON from the folded view (%.1f MB), first / median of "
        "the next 4 | %.0f / %.0f ms |\n",
        double(bytes) / 1e6, build[0], median({build.begin() + 1, build.end()}));
  }

  // First paints, each on a fresh server (median of 5).
  std::vector<double> runs_page, run_page, run_api, run_events, warm_page;
  size_t run_bytes = 0;
  auto page = [](httplib::Client& c) {
    for (const char* p : {"/", "/assets/style.css", "/assets/chart.js", "/assets/app.js"}) {
      timed_get(c, p);
    }
  };
  for (int k = 0; k < 5; ++k) {
    {
      Server s(dir / "runs");
      httplib::Client c("127.0.0.1", s.port);
      auto t0 = Clock::now();
      for (const char* p : {"/", "/assets/style.css", "/assets/chart.js", "/assets/app.js"}) {
        timed_get(c, p);
      }
      timed_get(c, "/api/runs");
      runs_page.push_back(since_ms(t0));
    }
    {
      Server s(dir / "runs");
      httplib::Client c("127.0.0.1", s.port);
      auto t0 = Clock::now();
      for (const char* p : {"/", "/assets/style.css", "/assets/chart.js", "/assets/app.js"}) {
        timed_get(c, p);
      }
      run_api.push_back(timed_get(c, "/api/runs/long", &run_bytes));
      run_events.push_back(timed_get(c, "/api/runs/long/events?limit=300"));
      run_page.push_back(since_ms(t0));
    }
    {
      Server s(dir / "runs");
      std::this_thread::sleep_for(std::chrono::seconds(6));  // the start-up fold is done
      httplib::Client c("127.0.0.1", s.port);
      auto t0 = Clock::now();
      page(c);
      timed_get(c, "/api/runs/long");
      timed_get(c, "/api/runs/long/events?limit=300");
      warm_page.push_back(since_ms(t0));
    }
  }
  std::printf(
      "| Runs page first paint (fresh server: page, files, /api/runs), median of 5 | "
      "%.0f ms (min %.0f, max %.0f) |\n",
      median(runs_page), percentile(runs_page, 0), percentile(runs_page, 1));
  std::printf(
      "| one run's first paint (fresh server: page, files, /api/runs/ID, its events), "
      "median of 5 | %.0f ms (min %.0f, max %.0f); of which /api/runs/ID %.0f ms (%.1f MB "
      "of JSON), events %.0f ms |\n",
      median(run_page), percentile(run_page, 0), percentile(run_page, 1), median(run_api),
      double(run_bytes) / 1e6, median(run_events));
  std::printf(
      "| one run's first paint, warm (fresh server, asked 6 s after its start), median of 5 "
      "| %.0f ms (min %.0f, max %.0f) |\n",
      median(warm_page), percentile(warm_page, 0), percentile(warm_page, 1));

  // Live: a writer appends a step every 20 ms to the long run (as its runner would at hour 20);
  // clients poll as pages do; one follows the stream.
  Writer writer(dir / "runs" / "long", /*existing=*/true);
  const int64_t live_from = writer.last_seq();
  Server s(dir / "runs");
  {  // warm, as a page would have (its first paint)
    httplib::Client c("127.0.0.1", s.port);
    timed_get(c, "/api/runs/long");
  }
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<std::string, std::vector<double>> lat;
  std::map<int64_t, Clock::time_point> eval_appended;  // seq of eval.finished -> when
  std::vector<double> stream_delay;
  int64_t steps = 0;
  std::string current_candidate = writer.candidate();  // under mu
  std::thread w([&] {
    while (!stop) {
      auto t0 = Clock::now();
      std::string cand_before = writer.candidate();
      writer.step();
      ++steps;
      if (writer.candidate() != cand_before) {
        std::lock_guard<std::mutex> lock(mu);
        eval_appended[writer.last_seq()] = Clock::now();
        current_candidate = writer.candidate();
      }
      std::this_thread::sleep_until(t0 + std::chrono::milliseconds(20));
    }
  });
  // Three clients act as people at their pages do: the Runs list refreshed, a run's newest events,
  // a candidate's diff (a click), every 100 ms each; a fourth opens the run's page (its whole
  // series) once a second. Four more pages follow the run's stream.
  std::vector<std::thread> clients;
  auto client = [&](int k,
                    std::vector<std::pair<std::string, std::string>> (*pick)(const std::string&),
                    int every_ms) {
    return std::thread([&, k, pick, every_ms] {
      httplib::Client c("127.0.0.1", s.port);
      std::mt19937 r(k);
      while (!stop) {
        std::string cand;
        {
          std::lock_guard<std::mutex> lock(mu);
          cand = current_candidate;
        }
        auto reqs = pick(cand);
        auto& [name, path] = reqs[r() % reqs.size()];
        double ms = timed_get(c, path);
        if (ms >= 0) {
          std::lock_guard<std::mutex> lock(mu);
          lat[name].push_back(ms);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(every_ms));
      }
    });
  };
  using Reqs = std::vector<std::pair<std::string, std::string>>;
  for (int k = 0; k < 3; ++k) {
    clients.push_back(client(
        k,
        [](const std::string& cand) {
          return Reqs{{"/api/runs", "/api/runs"},
                      {"/api/runs/ID/events", "/api/runs/long/events?limit=300"},
                      {"/api/runs/ID/candidates/HASH", "/api/runs/long/candidates/" + cand}};
        },
        100));
  }
  clients.push_back(client(
      3,
      [](const std::string&) {
        return Reqs{{"/api/runs/ID (a page opened)", "/api/runs/long"}};
      },
      1000));
  std::vector<std::thread> pages;
  for (int k = 0; k < 4; ++k) {
    pages.emplace_back([&] {
      httplib::Client c("127.0.0.1", s.port);
      c.set_read_timeout(static_cast<time_t>(seconds) + 30, 0);
      c.Get("/api/runs/long/stream?after=" + std::to_string(live_from),
            [&](const char*, size_t) { return !stop.load(); });
    });
  }
  std::thread follower([&] {
    httplib::Client c("127.0.0.1", s.port);
    c.set_read_timeout(static_cast<time_t>(seconds) + 30, 0);
    std::string buf;
    c.Get("/api/runs/long/stream?after=" + std::to_string(writer.last_seq()),
          [&](const char* data, size_t n) {
            buf.append(data, n);
            size_t end;
            while ((end = buf.find("\n\n")) != std::string::npos) {
              std::string msg = buf.substr(0, end);
              buf.erase(0, end + 2);
              size_t d = msg.find("data: ");
              if (d == std::string::npos) continue;
              json u = json::parse(msg.substr(d + 6), nullptr, false);
              if (u.is_discarded()) continue;
              auto now = Clock::now();
              std::lock_guard<std::mutex> lock(mu);
              for (const json& e : u["evaluations"]) {
                auto it = eval_appended.find(e.value("seq", int64_t{0}));
                if (it != eval_appended.end()) {
                  stream_delay.push_back(
                      std::chrono::duration<double, std::milli>(now - it->second).count());
                }
              }
            }
            return !stop.load();
          });
  });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  w.join();
  for (auto& t : clients) t.join();
  s.dashboard->stop();  // ends the streams
  follower.join();
  for (auto& t : pages) t.join();

  std::printf("| live: appends while measured | %lld steps (%.0f events/s) over %.0f s |\n",
              static_cast<long long>(steps), double(writer.last_seq() - live_from) / seconds,
              seconds);
  std::vector<double> all;
  for (auto& [name, v] : lat) {
    all.insert(all.end(), v.begin(), v.end());
    std::printf(
        "| API %s while appending: p50 / p99 / max (%zu requests) | %.1f / %.1f / %.1f ms |\n",
        name.c_str(), v.size(), percentile(v, 0.5), percentile(v, 0.99), percentile(v, 1));
  }
  std::printf(
      "| API, all requests while appending: p50 / p99 / max (%zu requests) | %.1f / %.1f / "
      "%.1f ms |\n",
      all.size(), percentile(all, 0.5), percentile(all, 0.99), percentile(all, 1));
  std::printf(
      "| live stream: append of an evaluation to its update at the page, p50 / p99 (%zu) | "
      "%.0f / %.0f ms |\n",
      stream_delay.size(), percentile(stream_delay, 0.5), percentile(stream_delay, 0.99));
  if (own_dir) fs::remove_all(dir);
  return 0;
}
