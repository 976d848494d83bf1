#include "tools/tool_recall.h"

#include <fmt/format.h>

#include "core/event_store.h"
#include "core/run_dir.h"

namespace marathon {
namespace {

class RecallTool : public Tool {
 public:
  std::string name() const override { return "recall"; }
  std::string description() const override {
    return "Read back a tool output that was elided from your context (the prompt shows it as "
           "`[output elided: recall(seq=N)]`), or the whole of a reply or output that was cut to "
           "fit the context window (the note on the cut names its seq); pass that seq. Or a "
           "blob an output names (`recall(blob=SHA)`: the whole report of a profile). Long "
           "texts come in pages: pass `offset` (bytes) for the next one.";
  }
  json parameters() const override {
    return {{"type", "object"},
            {"properties",
             {{"seq", {{"type", "integer"}, {"minimum", 1}}},
              {"blob", {{"type", "string"}, {"pattern", "^[0-9a-f]{64}$"}}},
              {"offset", {{"type", "integer"}, {"minimum", 0}}}}},
            {"additionalProperties", false}};
  }
  bool idempotent() const override { return true; }  // reads the log only

  ToolResult run(const json& args, ToolContext& ctx) override {
    ToolResult r;
    const size_t offset = args.contains("offset") ? args.at("offset").get<size_t>() : 0;
    if (args.contains("blob")) {  // a blob of this run's log that an output names
      const std::string sha = args.at("blob").get<std::string>();
      std::string bytes;
      try {
        if (!ctx.get_blob) throw std::runtime_error("no blob store");
        bytes = ctx.get_blob(sha);
      } catch (const std::exception& e) {
        r.ok = false;
        r.output = fmt::format("recall: the run's log holds no blob {} ({})", sha, e.what());
        return r;
      }
      r.output = recall_page_at("blob=" + sha, "a blob of the log", bytes, offset);
      return r;
    }
    if (!args.contains("seq")) {
      r.ok = false;
      r.output =
          "recall: pass seq (an elided output's or a cut's) or blob (a blob an output names)";
      return r;
    }
    const int64_t seq = args.at("seq").get<int64_t>();
    const std::string db = (ctx.run_dir / kEventsDbName).string();
    std::vector<Event> found;
    try {
      auto store = EventStore::open(db, EventStore::Mode::kReadOnly);
      found = store->read(seq, seq);
    } catch (const std::exception& e) {
      r.ok = false;
      r.output = fmt::format("recall: cannot read the run's log: {}", e.what());
      return r;
    }
    if (found.empty()) {
      r.ok = false;
      r.output = fmt::format("recall: there is no event with seq {} in the log", seq);
      return r;
    }
    const Event& e = found.front();
    if (is<events::ModelResponse>(e)) {
      auto reply = payload_of<events::ModelResponse>(e);
      if (reply.purpose.empty()) {
        // A reply the prompt shows cut to fit the window: the whole of it, from the log.
        r.output = recall_page_of(seq, "the model's reply", reply_text(reply), offset);
        return r;
      }
    }
    if (!is<events::ToolFinished>(e)) {
      r.ok = false;
      r.output = fmt::format(
          "recall: seq {} is a {} event, not a tool output or a model reply; pass the seq shown "
          "in `[output elided: recall(seq=N)]` or in a note on a cut",
          seq, e.type);
      return r;
    }
    auto finished = payload_of<events::ToolFinished>(e);
    std::string full = finished.output;
    const std::string& sha = finished.output_sha;
    if (!sha.empty() && ctx.get_blob) {
      try {
        full = ctx.get_blob(sha);
      } catch (const std::exception& ex) {
        full +=
            fmt::format("\n[recall: the uncapped output (blob {}) is missing: {}]", sha, ex.what());
      }
    }
    r.output = recall_page(seq, finished.name.empty() ? "?" : finished.name, full, offset);
    return r;
  }
};

}  // namespace

std::string reply_text(const events::ModelResponse& response) {
  static const json kNone = json::object();
  const json& m = response.message.is_object() ? response.message : kNone;
  std::string out;
  if (m.contains("content") && m.at("content").is_string()) {
    out = m.at("content").get<std::string>();
  }
  if (m.contains("tool_calls") && m.at("tool_calls").is_array()) {
    const json& calls = m.at("tool_calls");
    for (size_t i = 0; i < calls.size(); ++i) {
      const json& c = calls[i];
      if (!c.is_object()) continue;
      const json& f = c.contains("function") && c.at("function").is_object() ? c.at("function") : c;
      std::string args;
      if (f.contains("arguments")) {
        args = f.at("arguments").is_string() ? f.at("arguments").get<std::string>()
                                             : f.at("arguments").dump();
      }
      out += fmt::format(
          "{}[tool call {} of {}: {} (id {}), arguments:]\n{}", out.empty() ? "" : "\n", i + 1,
          calls.size(),
          f.contains("name") && f.at("name").is_string() ? f.at("name").get<std::string>() : "?",
          c.contains("id") && c.at("id").is_string() ? c.at("id").get<std::string>() : "?", args);
    }
  }
  return out;
}

std::string recall_page(int64_t seq, const std::string& tool_name, const std::string& full,
                        size_t offset, size_t page_bytes) {
  return recall_page_of(seq, "output of " + tool_name, full, offset, page_bytes);
}

std::string recall_page_of(int64_t seq, const std::string& what, const std::string& full,
                           size_t offset, size_t page_bytes) {
  return recall_page_at(fmt::format("seq={}", seq), what, full, offset, page_bytes);
}

std::string recall_page_at(const std::string& at, const std::string& what, const std::string& full,
                           size_t offset, size_t page_bytes) {
  if (offset >= full.size() && !(offset == 0 && full.empty())) {
    return fmt::format("recall({}): offset {} is past the end ({} bytes)", at, offset, full.size());
  }
  size_t end = std::min(full.size(), offset + page_bytes);
  while (end < full.size() && end > offset &&
         (static_cast<unsigned char>(full[end]) & 0xC0) == 0x80) {
    --end;  // keep UTF-8 sequences whole
  }
  std::string head = fmt::format("recall({}): {}", at, what);
  if (offset > 0 || end < full.size()) {
    head += fmt::format(", bytes {}..{} of {}", offset, end, full.size());
  }
  std::string out = head + "\n" + full.substr(offset, end - offset);
  if (end < full.size()) {
    out += fmt::format("\n[more: recall({}, offset={})]", at, end);
  }
  return out;
}

std::unique_ptr<Tool> make_recall_tool() { return std::make_unique<RecallTool>(); }

}  // namespace marathon
