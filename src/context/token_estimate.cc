#include "context/token_estimate.h"

#include <algorithm>

#include "core/events.h"

namespace marathon::context {
namespace {

enum class CharClass { kLetter, kDigit, kSpace, kNewline, kPunct, kUtf8Lead, kUtf8Cont };

CharClass classify(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return CharClass::kLetter;
  if (c >= '0' && c <= '9') return CharClass::kDigit;
  if (c == ' ' || c == '\t') return CharClass::kSpace;
  if (c == '\n' || c == '\r') return CharClass::kNewline;
  if (c >= 0x80) return (c & 0xC0) == 0x80 ? CharClass::kUtf8Cont : CharClass::kUtf8Lead;
  return CharClass::kPunct;
}

constexpr int64_t kMessageOverhead = 4;  // role and delimiters
constexpr int64_t kToolCallOverhead = 8;

}  // namespace

int64_t estimate_text_tokens(std::string_view text) {
  int64_t tokens = 0;
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    CharClass k = classify(static_cast<unsigned char>(text[i]));
    size_t j = i + 1;
    switch (k) {
      case CharClass::kLetter: {
        while (j < n && classify(static_cast<unsigned char>(text[j])) == CharClass::kLetter) ++j;
        tokens += static_cast<int64_t>((j - i + 3) / 4);
        break;
      }
      case CharClass::kDigit: {
        while (j < n && classify(static_cast<unsigned char>(text[j])) == CharClass::kDigit) ++j;
        tokens += static_cast<int64_t>((j - i + 2) / 3);
        break;
      }
      case CharClass::kSpace: {
        while (j < n && classify(static_cast<unsigned char>(text[j])) == CharClass::kSpace) ++j;
        // One space before a word is merged into the word's token; longer runs cost one.
        if (j - i > 1) tokens += 1;
        break;
      }
      case CharClass::kNewline:
        tokens += 1;
        break;
      case CharClass::kPunct:
        tokens += 1;
        break;
      case CharClass::kUtf8Lead:
        while (j < n && classify(static_cast<unsigned char>(text[j])) == CharClass::kUtf8Cont) ++j;
        tokens += 1;
        break;
      case CharClass::kUtf8Cont:  // stray continuation byte
        tokens += 1;
        break;
    }
    i = j;
  }
  return tokens;
}

int64_t estimate_message_tokens(const json& message) {
  int64_t tokens = kMessageOverhead;
  if (!message.is_object()) return tokens;
  if (auto it = message.find("content"); it != message.end()) {
    if (it->is_string()) {
      tokens += estimate_text_tokens(it->get_ref<const std::string&>());
    } else if (!it->is_null()) {
      tokens += estimate_text_tokens(it->dump());
    }
  }
  if (auto it = message.find("tool_calls"); it != message.end() && it->is_array()) {
    for (const json& call : *it) {
      tokens += kToolCallOverhead;
      const json* fn = call.contains("function") ? &call.at("function") : &call;
      if (auto name = fn->find("name"); name != fn->end() && name->is_string()) {
        tokens += estimate_text_tokens(name->get_ref<const std::string&>());
      }
      if (auto args = fn->find("arguments"); args != fn->end()) {
        tokens += args->is_string() ? estimate_text_tokens(args->get_ref<const std::string&>())
                                    : estimate_text_tokens(args->dump());
      }
    }
  }
  if (auto it = message.find("thinking_blocks"); it != message.end() && it->is_array()) {
    tokens += estimate_text_tokens(it->dump());
  }
  if (auto it = message.find("tool_call_id"); it != message.end() && it->is_string()) {
    tokens += estimate_text_tokens(it->get_ref<const std::string&>());
  }
  return tokens;
}

int64_t estimate_request_tokens(const json& messages, const json& tools) {
  int64_t tokens = 3;
  if (messages.is_array()) {
    for (const json& m : messages) tokens += estimate_message_tokens(m);
  }
  if (tools.is_array() && !tools.empty()) tokens += estimate_text_tokens(tools.dump());
  return tokens;
}

}  // namespace marathon::context
