#include "control/control_server.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "control/compact_verb.h"
#include "control/control_errors.h"
#include "control/goal_verb.h"
#include "control/served_runs.h"
#include "control/stop_verb.h"
#include "core/load_state.h"
#include "core/log_export.h"
#include "rpc/jsonrpc.h"
#include "rpc/line_io.h"
#include "tools/json_schema.h"

namespace marathon::control {
namespace {

using rpc::ErrorCode;
using rpc::RpcError;

constexpr int64_t kMaxPage = 1000;
constexpr int64_t kDefaultPage = 100;
constexpr int64_t kMaxEventsPerPoll = 500;  // per subscription and poll: others get their turn
// The largest seq a param may give: every integer up to it is exact as a double and as an int64.
constexpr int64_t kMaxSeq = int64_t{1} << 53;

json seq_schema() { return {{"type", "integer"}, {"minimum", 1}, {"maximum", kMaxSeq}}; }

RpcError error(ControlError code, const std::string& message, json data = nullptr) {
  return RpcError(static_cast<int>(code), message, std::move(data));
}

// Params schemas (tools/json_schema.h's subset). Every method takes named params; unknown names
// are refused so that a misspelt one never goes unnoticed.
json object_schema(json properties, json required = json::array()) {
  properties["run"] = {{"type", "string"}};
  return {{"type", "object"},
          {"properties", std::move(properties)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

json text(int min_length = 0) {
  json s = {{"type", "string"}};
  if (min_length > 0) s["minLength"] = min_length;
  return s;
}

std::string opt_string(const json& p, const char* key) {
  auto it = p.find(key);
  return it != p.end() && it->is_string() ? it->get<std::string>() : "";
}

struct Subscription {
  std::string id;
  ServedRun* run = nullptr;
  int64_t next_seq = 1;
  bool active = false;  // notifications start once the subscribe response is out
};

class Server {
 public:
  Server(ServedRuns& runs, rpc::LineWriter& out, double poll_s)
      : runs_(runs), out_(out), poll_s_(poll_s) {
    add_methods();
    poller_ = std::thread([this] { poll_loop(); });
  }
  ~Server() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    poller_.join();
  }

  void handle_line(const std::string& line) {
    rpc::ParsedLine parsed = rpc::parse_line(line);
    json replies = json::array();
    std::vector<std::function<void()>> after;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const rpc::Parsed& entry : parsed.entries) {
        if (!entry.message) {
          replies.push_back(entry.error_response);
          continue;
        }
        json reply = dispatch(*entry.message, &after);
        if (!reply.is_null()) replies.push_back(std::move(reply));
      }
      if (parsed.batch) {
        if (!replies.empty()) out_.write(replies);
      } else {
        for (const json& r : replies) out_.write(r);
      }
      for (auto& f : after) f();
    }
    cv_.notify_all();
  }

  void line_too_long() {
    out_.write(
        rpc::error_response(nullptr, static_cast<int>(ErrorCode::kParseError),
                            "parse error: the line is longer than the limit and was dropped"));
  }

 private:
  struct Method {
    json schema;
    std::function<json(const json&, std::vector<std::function<void()>>*)> handler;
  };

  // The response to one message (null for a notification or a client's response).
  json dispatch(const rpc::Message& m, std::vector<std::function<void()>>* after) {
    if (m.kind == rpc::Message::Kind::kResponse) return nullptr;
    bool notify = m.kind == rpc::Message::Kind::kNotification;
    try {
      json result = call(m, after);
      return notify ? json(nullptr) : rpc::response(m.id, std::move(result));
    } catch (const RpcError& e) {
      return notify ? json(nullptr) : rpc::error_response(m.id, e);
    } catch (const StoreError& e) {
      return notify ? json(nullptr)
                    : rpc::error_response(m.id, error(ControlError::kLogUnavailable, e.what()));
    } catch (const std::exception& e) {
      return notify ? json(nullptr)
                    : rpc::error_response(m.id, static_cast<int>(ErrorCode::kInternalError),
                                          fmt::format("internal error: {}", e.what()));
    }
  }

  json call(const rpc::Message& m, std::vector<std::function<void()>>* after) {
    auto it = methods_.find(m.method);
    if (it == methods_.end()) {
      json names = json::array();
      for (const auto& [name, method] : methods_) names.push_back(name);
      throw RpcError(ErrorCode::kMethodNotFound, fmt::format("unknown method \"{}\"", m.method),
                     json{{"methods", names}});
    }
    if (!initialized_ && m.method != "initialize") {
      throw error(ControlError::kNotInitialized,
                  fmt::format("{} before initialize: send initialize first", m.method));
    }
    json params = rpc::params_object(m);
    std::vector<std::string> problems = validate_schema(params, it->second.schema, "params");
    if (!problems.empty()) {
      throw RpcError(ErrorCode::kInvalidParams,
                     fmt::format("invalid params for {}: {}", m.method, problems.front()),
                     json{{"problems", problems}, {"schema", it->second.schema}});
    }
    return it->second.handler(params, after);
  }

  ServedRun& run_of(const json& p) { return runs_.find(opt_string(p, "run")); }

  // An event as the protocol gives it: the msp record of `marathon log export --format msp`.
  static json record(const Event& e, const ServedRun& run) { return to_msp(e, run.run_id); }

  void add(const std::string& name, json schema,
           std::function<json(const json&, std::vector<std::function<void()>>*)> handler) {
    methods_[name] = Method{std::move(schema), std::move(handler)};
  }

  void add_methods() {
    add("initialize",
        {{"type", "object"},
         {"properties",
          {{"protocolVersion", {{"type", "string"}}}, {"clientInfo", {{"type", "object"}}}}},
         {"additionalProperties", false}},
        [this](const json&, auto*) { return initialize(); });
    add("run/list", {{"type", "object"}, {"additionalProperties", false}},
        [this](const json&, auto*) {
          json runs = json::array();
          for (ServedRun& r : runs_.all()) {
            try {
              runs.push_back(r.describe());
            } catch (const StoreError& e) {
              runs.push_back({{"run", r.name}, {"dir", r.dir.string()}, {"error", e.what()}});
            }
          }
          return json{{"runs", runs}};
        });
    add("run/status", object_schema(json::object()), [this](const json& p, auto*) {
      ServedRun& run = run_of(p);
      return json{{"run", run.name}, {"status", to_json(load_state(run.read_store()))}};
    });
    add("log/page",
        object_schema({{"from_seq", seq_schema()},
                       {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", kMaxPage}}}}),
        [this](const json& p, auto*) { return log_page(p); });
    add("log/subscribe", object_schema({{"from_seq", seq_schema()}}),
        [this](const json& p, auto* after) { return log_subscribe(p, after); });
    add("log/unsubscribe",
        {{"type", "object"},
         {"properties", {{"subscription", text(1)}}},
         {"required", {"subscription"}},
         {"additionalProperties", false}},
        [this](const json& p, auto*) {
          std::string id = p["subscription"];
          if (subs_.erase(id) == 0) {
            throw RpcError(ErrorCode::kInvalidParams, fmt::format("no subscription \"{}\"", id));
          }
          return json::object();
        });
    for (GoalVerb verb : kGoalVerbs) {
      bool objective = verb == GoalVerb::kSet || verb == GoalVerb::kEdit;
      json schema = objective ? object_schema({{"objective", text(1)}}, {"objective"})
                              : object_schema({{"note", text()}});
      add(std::string("goal/") + to_string(verb), schema,
          [this, verb, objective](const json& p, auto*) {
            return goal(verb, p, opt_string(p, objective ? "objective" : "note"));
          });
    }
    add("session/compact", object_schema({{"now", {{"type", "boolean"}}}}),
        [this](const json& p, auto*) { return compact(p); });
    add("run/stop", object_schema({{"reason", text()}}),
        [this](const json& p, auto*) { return stop(p); });
  }

  json initialize() {
    initialized_ = true;
    json methods = json::array();
    for (const auto& [name, m] : methods_) methods.push_back(name);
    json runs = json::array();
    for (const ServedRun& r : runs_.all()) runs.push_back(r.name);
    return {{"protocolVersion", kProtocolVersion},
            {"serverInfo", {{"name", "marathon"}, {"version", "0.1.0"}}},
            {"capabilities",
             {{"methods", methods},
              {"notifications", {"log/event", "log/ended"}},
              {"records", {{"format", "msp"}, {"schema_version", kMspSchemaVersion}}}}},
            {"runs", runs}};
  }

  json log_page(const json& p) {
    ServedRun& run = run_of(p);
    int64_t from = p.value("from_seq", int64_t{1});
    int64_t limit = p.value("limit", kDefaultPage);
    EventStore& store = run.read_store();
    json records = json::array();
    int64_t next = from;
    store.for_each(from, [&](const Event& e) {
      records.push_back(record(e, run));
      next = e.seq + 1;
      return static_cast<int64_t>(records.size()) < limit;
    });
    return {{"run", run.name},
            {"records", records},
            {"next_seq", next},
            {"last_seq", store.last_seq()}};
  }

  json log_subscribe(const json& p, std::vector<std::function<void()>>* after) {
    ServedRun& run = run_of(p);
    int64_t last = run.read_store().last_seq();
    int64_t from = p.value("from_seq", last + 1);
    std::string id = fmt::format("sub-{}", next_sub_++);
    subs_[id] = Subscription{id, &run, from, false};
    after->push_back([this, id] {
      if (auto it = subs_.find(id); it != subs_.end()) it->second.active = true;
    });
    return {{"subscription", id}, {"run", run.name}, {"next_seq", from}, {"last_seq", last}};
  }

  // A verb's refusal as the protocol's error.
  static void check(const VerbResult& r) {
    switch (r.status) {
      case VerbStatus::kDone:
        return;
      case VerbStatus::kBadInput:
        throw RpcError(ErrorCode::kInvalidParams, r.message);
      case VerbStatus::kWrongState:
        throw error(ControlError::kNotApplicable, r.message);
      case VerbStatus::kNoRun:
        throw error(ControlError::kLogUnavailable, r.message);
    }
  }

  // The event a verb appended, as its record (null when it appended none).
  static json record_at(ServedRun& run, int64_t seq) {
    if (seq <= 0) return nullptr;
    std::vector<Event> e = run.read_store().read(seq, seq);
    return e.empty() ? json(nullptr) : record(e.front(), run);
  }

  json goal(GoalVerb verb, const json& p, const std::string& text) {
    ServedRun& run = run_of(p);
    VerbResult r = change_goal(run.dir, verb, text);
    check(r);
    const State& s = r.state;
    return {{"record", record_at(run, r.seq)},
            {"goal",
             {{"objective", s.goal.objective},
              {"status", s.goal.status},
              {"progress", s.goal.progress}}},
            {"run_state", s.done     ? "finished"
                          : s.paused ? "paused"
                                     : "open"}};
  }

  json compact(const json& p) {
    ServedRun& run = run_of(p);
    CompactResult r = compact_run(run.dir, p.value("now", false));
    check(r);
    json out = {{"request_seq", r.seq}, {"ran", r.compacted_now}};
    if (r.compacted_now) {
      out["outcome"] = r.outcome;
      out["source"] = r.source;
      out["tokens_before"] = r.tokens_before;
      out["tokens_after"] = r.tokens_after;
    }
    return out;
  }

  json stop(const json& p) {
    ServedRun& run = run_of(p);
    std::string reason = opt_string(p, "reason");
    VerbResult r = stop_run(run.dir, reason.empty() ? "run/stop" : reason);
    check(r);
    json out = {{"already_stopped", r.seq == 0 && r.branches_asked.empty()},
                {"record", record_at(run, r.seq)}};
    if (!r.branches_asked.empty()) out["branches_asked"] = r.branches_asked;
    return out;
  }

  // Sends each active subscription the events appended since it last looked, in seq order.
  void poll_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      for (auto it = subs_.begin(); it != subs_.end();) {
        Subscription& sub = it->second;
        if (!sub.active) {
          ++it;
          continue;
        }
        try {
          int64_t sent = 0;
          sub.run->read_store().for_each(sub.next_seq, [&](const Event& e) {
            out_.write(rpc::notification("log/event", {{"subscription", sub.id},
                                                       {"run", sub.run->name},
                                                       {"record", record(e, *sub.run)}}));
            sub.next_seq = e.seq + 1;
            return ++sent < kMaxEventsPerPoll;
          });
          ++it;
        } catch (const std::exception& e) {
          out_.write(rpc::notification(
              "log/ended",
              {{"subscription", sub.id}, {"run", sub.run->name}, {"reason", e.what()}}));
          it = subs_.erase(it);
        }
      }
      cv_.wait_for(lock, std::chrono::duration<double>(poll_s_));
    }
  }

  ServedRuns& runs_;
  rpc::LineWriter& out_;
  double poll_s_;
  std::map<std::string, Method> methods_;
  bool initialized_ = false;
  std::mutex mu_;  // everything below, the runs' reader connections, the method handlers
  std::map<std::string, Subscription> subs_;
  int next_sub_ = 1;
  bool stopping_ = false;
  std::condition_variable cv_;
  std::thread poller_;
};

}  // namespace

int serve_control(const ControlOptions& options) {
  std::unique_ptr<ServedRuns> runs;
  try {
    runs = std::make_unique<ServedRuns>(options.run_dirs);
  } catch (const StoreError& e) {
    std::fprintf(stderr, "serve --stdio: %s\n", e.what());
    return 2;
  }
  rpc::ignore_sigpipe();
  rpc::LineWriter out(options.out_fd);
  rpc::LineReader in(options.in_fd);
  Server server(*runs, out, options.poll_s);
  while (std::optional<rpc::LineReader::Line> line = in.next()) {
    if (line->too_long) {
      server.line_too_long();
    } else if (line->text.find_first_not_of(" \t") != std::string::npos) {
      server.handle_line(line->text);
    }
    if (out.closed()) break;
  }
  return 0;
}

}  // namespace marathon::control
