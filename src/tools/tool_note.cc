#include "tools/tool_note.h"

#include <fmt/format.h>

namespace marathon {
namespace {

constexpr size_t kMaxNoteChars = 2000;

class NoteTool : public Tool {
 public:
  std::string name() const override { return "note"; }
  std::string description() const override {
    return "Record a note in the run's ledger, which stays in your context for the whole run: "
           "`strategy` (what you are about to try and why), `finding` (something you measured or "
           "learned), `dead_end` (an approach that failed, so it is not tried again).";
  }
  json parameters() const override {
    return {{"type", "object"},
            {"properties",
             {{"kind",
               {{"type", "string"},
                {"enum",
                 {to_string(LedgerKind::kStrategy), to_string(LedgerKind::kFinding),
                  to_string(LedgerKind::kDeadEnd)}}}},
              {"text", {{"type", "string"}, {"minLength", 1}}}}},
            {"required", {"kind", "text"}},
            {"additionalProperties", false}};
  }
  bool idempotent() const override { return true; }  // pure: its only effect is its event

  ToolResult run(const json& args, ToolContext&) override {
    ToolResult r;
    // The parameters' enum admits exactly the note kinds (the registry checked the arguments).
    LedgerKind kind = ledger_kind_from_string(args.at("kind").get<std::string>());
    std::string text = args.at("text").get<std::string>();
    bool cut = text.size() > kMaxNoteChars;
    if (cut) text = text.substr(0, kMaxNoteChars);
    r.events.push_back(make_event(events::LedgerNoted{kind, text}));
    r.output = fmt::format("noted ({}){}", to_string(kind),
                           cut ? fmt::format("; cut to {} characters", kMaxNoteChars) : "");
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_note_tool() { return std::make_unique<NoteTool>(); }

}  // namespace marathon
