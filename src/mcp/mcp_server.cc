#include "mcp/mcp_server.h"

#include <fmt/format.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "mcp/mcp_tools.h"
#include "rpc/jsonrpc.h"
#include "rpc/line_io.h"
#include "tools/json_schema.h"

namespace marathon::mcp {
namespace {

using rpc::ErrorCode;
using rpc::RpcError;

// The MCP revisions this server speaks, newest first: a client asking for one of them gets it, any
// other client gets the newest (and may disconnect).
const std::vector<std::string> kProtocolVersions = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                    "2024-11-05"};

// Error codes beside JSON-RPC's (docs/mcp.md); -32002 is the MCP specification's "resource not
// found".
enum class McpError : int {
  kNotInitialized = -32001,
  kResourceNotFound = -32002,
  kLogUnavailable = -32003,
};

RpcError error(McpError code, const std::string& message, json data = nullptr) {
  return RpcError(static_cast<int>(code), message, std::move(data));
}

constexpr const char* kTaskUri = "marathon://task";
constexpr const char* kStarterPrefix = "marathon://starter/";
constexpr const char* kBestPrefix = "marathon://best/";

class Server {
 public:
  Server(HarnessRun& run, rpc::LineWriter& out) : run_(run), out_(out) {
    best_ = run_.state().best_candidate;
    worker_ = std::thread([this] { work(); });
  }
  ~Server() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      input_ended_ = true;
      queue_.clear();  // requests not started yet: the client has gone
    }
    cv_.notify_all();
    worker_.join();
  }

  // One line from the client (reader thread).
  void on_line(const std::string& line) {
    rpc::ParsedLine parsed = rpc::parse_line(line);
    if (parsed.batch) {
      out_.write(rpc::error_response(nullptr, static_cast<int>(ErrorCode::kInvalidRequest),
                                     "invalid request: batches are not part of MCP since "
                                     "2025-06-18; send one message per line"));
      return;
    }
    const rpc::Parsed& entry = parsed.entries.front();
    if (!entry.message) {
      out_.write(entry.error_response);
      return;
    }
    const rpc::Message& m = *entry.message;
    if (m.kind == rpc::Message::Kind::kResponse) return;  // we send no requests
    if (m.kind == rpc::Message::Kind::kNotification) {
      on_notification(m);
      return;
    }
    if (m.method == "ping") {  // answered at once, also while a tool runs
      out_.write(rpc::response(m.id, json::object()));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(m);
    }
    cv_.notify_all();
  }

  void line_too_long() {
    out_.write(
        rpc::error_response(nullptr, static_cast<int>(ErrorCode::kParseError),
                            "parse error: the line is longer than the limit and was dropped"));
  }

 private:
  void on_notification(const rpc::Message& m) {
    if (m.method == "notifications/initialized") {
      std::lock_guard<std::mutex> lock(mu_);
      client_ready_ = true;
    } else if (m.method == "notifications/cancelled") {
      // A request not started is dropped; the one running finishes (an evaluation cannot be
      // taken back: it is logged and cached) and its response is not sent. Unknown ids and the
      // initialize request are ignored, as the specification allows.
      if (!m.params.is_object() || !m.params.contains("requestId")) return;
      const json& id = m.params["requestId"];
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = queue_.begin(); it != queue_.end(); ++it) {
        if (it->id == id && it->method != "initialize") {
          queue_.erase(it);
          return;
        }
      }
      if (busy_ && current_.id == id && current_.method != "initialize") cancelled_ = true;
    }
    // Other notifications (roots, progress of ours) need nothing from this server.
  }

  void work() {
    for (;;) {
      rpc::Message m;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return input_ended_ || !queue_.empty(); });
        if (queue_.empty()) return;
        m = queue_.front();
        queue_.pop_front();
        current_ = m;
        busy_ = true;
        cancelled_ = false;
      }
      json reply;
      try {
        reply = rpc::response(m.id, handle(m));
      } catch (const RpcError& e) {
        reply = rpc::error_response(m.id, e);
      } catch (const StoreError& e) {
        reply = rpc::error_response(m.id, error(McpError::kLogUnavailable, e.what()));
      } catch (const std::exception& e) {
        reply = rpc::error_response(m.id, static_cast<int>(ErrorCode::kInternalError),
                                    fmt::format("internal error: {}", e.what()));
      }
      bool send = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        send = !cancelled_;
        busy_ = false;
      }
      if (send) out_.write(reply);
      announce_best();
    }
  }

  json handle(const rpc::Message& m) {
    if (m.method == "initialize") return initialize(rpc::params_object(m));
    if (!initialized_) {
      throw error(McpError::kNotInitialized,
                  fmt::format("{} before initialize: send initialize first", m.method));
    }
    json p = rpc::params_object(m);
    if (m.method == "tools/list") {
      json tools = json::array();
      for (const McpTool& t : mcp_tools()) tools.push_back(t.definition());
      return {{"tools", tools}};
    }
    if (m.method == "tools/call") return call_tool(p);
    if (m.method == "resources/list") return {{"resources", resources()}};
    if (m.method == "resources/templates/list") return {{"resourceTemplates", json::array()}};
    if (m.method == "resources/read") return read_resource(p);
    throw RpcError(ErrorCode::kMethodNotFound, fmt::format("unknown method \"{}\"", m.method));
  }

  json initialize(const json& p) {
    if (initialized_) throw RpcError(ErrorCode::kInvalidRequest, "initialize was already done");
    auto v = p.find("protocolVersion");
    if (v == p.end() || !v->is_string()) {
      throw RpcError(ErrorCode::kInvalidParams,
                     "initialize needs params.protocolVersion (a string)",
                     json{{"supported", kProtocolVersions}});
    }
    std::string version = kProtocolVersions.front();
    for (const std::string& s : kProtocolVersions) {
      if (*v == s) version = s;
    }
    initialized_ = true;
    const TaskSpec& task = run_.task();
    return {
        {"protocolVersion", version},
        {"capabilities",
         {{"tools", {{"listChanged", false}}},
          {"resources", {{"subscribe", false}, {"listChanged", true}}}}},
        {"serverInfo", {{"name", "marathon"}, {"title", "marathon harness"}, {"version", "0.1.0"}}},
        {"instructions",
         fmt::format("marathon harness for task {} (run {}). Read the resource {} for the task, "
                     "change the editable files and call `evaluate` with them; every call is "
                     "logged in the run, evaluations are cached, the task's rules are "
                     "enforced by its evaluator.",
                     task.name, run_.run_dir().string(), kTaskUri)}};
  }

  void progress(const json& token, double done, const std::string& message) {
    if (token.is_null()) return;
    out_.write(rpc::notification(
        "notifications/progress",
        {{"progressToken", token}, {"progress", done}, {"total", 1}, {"message", message}}));
  }

  json call_tool(const json& p) {
    auto name = p.find("name");
    if (name == p.end() || !name->is_string()) {
      throw RpcError(ErrorCode::kInvalidParams, "tools/call needs params.name (a string)");
    }
    const McpTool* tool = find_mcp_tool(*name);
    if (!tool) {
      json names = json::array();
      for (const McpTool& t : mcp_tools()) names.push_back(t.name);
      throw RpcError(ErrorCode::kInvalidParams,
                     fmt::format("unknown tool \"{}\"", name->get<std::string>()),
                     json{{"tools", names}});
    }
    json args = p.contains("arguments") ? p["arguments"] : json::object();
    if (args.is_null()) args = json::object();
    // Arguments that break the schema are a tool error the model can correct (MCP 2025-11-25).
    std::vector<std::string> problems = validate_schema(args, tool->input_schema, "arguments");
    if (!problems.empty()) {
      std::string text = fmt::format("invalid arguments for {}:", tool->name);
      for (const std::string& pr : problems) text += "\n- " + pr;
      return call_result({true, text, {{"problems", problems}}});
    }
    json token = nullptr;
    if (p.contains("_meta") && p["_meta"].is_object() && p["_meta"].contains("progressToken")) {
      token = p["_meta"]["progressToken"];
    }
    if (tool->slow) progress(token, 0, "running the task's evaluator");
    ToolOutcome o = tool->call(run_, args);
    if (tool->slow) progress(token, 1, "done");
    return call_result(o);
  }

  json resources() {
    json list = json::array();
    const TaskSpec& task = run_.task();
    list.push_back({{"uri", kTaskUri},
                    {"name", "task"},
                    {"title", "Task " + task.name},
                    {"description", "The task: its description, metric, editable files and rules"},
                    {"mimeType", "text/markdown"}});
    for (const auto& [path, content] : run_.starter_files()) {
      list.push_back({{"uri", kStarterPrefix + path},
                      {"name", "starter/" + path},
                      {"title", "Starter " + path},
                      {"description", "The task's starter version of " + path},
                      {"mimeType", "text/plain"},
                      {"size", content.size()}});
    }
    for (const auto& [path, content] : run_.best_files()) {
      list.push_back({{"uri", kBestPrefix + path},
                      {"name", "best/" + path},
                      {"title", "Best " + path},
                      {"description", "The best correct candidate's " + path},
                      {"mimeType", "text/plain"},
                      {"size", content.size()}});
    }
    return list;
  }

  json read_resource(const json& p) {
    auto uri_it = p.find("uri");
    if (uri_it == p.end() || !uri_it->is_string()) {
      throw RpcError(ErrorCode::kInvalidParams, "resources/read needs params.uri (a string)");
    }
    std::string uri = *uri_it;
    auto contents = [&](const std::string& mime, const std::string& text) {
      return json{{"contents", json::array({{{"uri", uri}, {"mimeType", mime}, {"text", text}}})}};
    };
    if (uri == kTaskUri) return contents("text/markdown", run_.task_text());
    for (const auto& [prefix, files] : {std::pair{kStarterPrefix, run_.starter_files()},
                                        std::pair{kBestPrefix, run_.best_files()}}) {
      std::string pre = prefix;
      if (uri.rfind(pre, 0) != 0) continue;
      auto f = files.find(uri.substr(pre.size()));
      if (f != files.end()) return contents("text/plain", f->second);
    }
    throw error(McpError::kResourceNotFound, "resource not found", json{{"uri", uri}});
  }

  // resources/list_changed when the best candidate (and so the best/ resources) changed.
  void announce_best() {
    if (run_.state().best_candidate == best_) return;
    best_ = run_.state().best_candidate;
    bool ready = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready = client_ready_;
    }
    if (ready)
      out_.write(rpc::notification("notifications/resources/list_changed", json::object()));
  }

  HarnessRun& run_;
  rpc::LineWriter& out_;
  bool initialized_ = false;  // worker thread only
  std::string best_;          // worker thread only
  std::mutex mu_;             // what follows
  std::condition_variable cv_;
  std::deque<rpc::Message> queue_;
  bool input_ended_ = false;
  bool client_ready_ = false;
  rpc::Message current_;
  bool busy_ = false;
  bool cancelled_ = false;
  std::thread worker_;
};

}  // namespace

int serve_mcp(const McpOptions& options) {
  std::unique_ptr<HarnessRun> run;
  try {
    run = std::make_unique<HarnessRun>(options.harness);
  } catch (const HarnessError& e) {
    std::fprintf(stderr, "marathon mcp: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "marathon mcp: task %s, run %s\n", run->task().name.c_str(),
               run->run_dir().string().c_str());
  rpc::ignore_sigpipe();
  rpc::LineWriter out(options.out_fd);
  rpc::LineReader in(options.in_fd);
  {
    Server server(*run, out);
    while (std::optional<rpc::LineReader::Line> line = in.next()) {
      if (line->too_long) {
        server.line_too_long();
      } else if (line->text.find_first_not_of(" \t") != std::string::npos) {
        server.on_line(line->text);
      }
      if (out.closed()) break;
    }
  }  // the request running finishes; the session ends with the run
  return 0;
}

}  // namespace marathon::mcp
