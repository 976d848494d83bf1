#include "context/token_estimate.h"

#include <algorithm>

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

// A model.response whose usage the runtime estimated (the provider's was missing or rejected).
bool usage_is_estimate(const json& payload) {
  auto it = payload.find("usage_estimated");
  return it != payload.end() && it->is_boolean() && it->get<bool>();
}

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

double fit_token_ratio(const std::vector<Event>& events, int max_pairs) {
  double sum_estimated = 0;
  double sum_reported = 0;
  int pairs = 0;
  int64_t pending_estimate = 0;  // raw estimate of the last model.request not yet answered
  // Walk backwards: a response is paired with the nearest request before it.
  int64_t reported = 0;
  for (auto it = events.rbegin(); it != events.rend() && pairs < max_pairs; ++it) {
    const Event& e = *it;
    if (e.type == ev::kModelResponse) {
      reported = 0;
      const json& p = e.payload;
      if (p.contains("usage") && p["usage"].is_object()) {
        const json& u = p["usage"];
        if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number()) {
          reported = u["prompt_tokens"].get<int64_t>();
        }
      }
      if (p.contains("purpose")) reported = 0;  // summariser calls are not prompts we estimated
      if (usage_is_estimate(p)) reported = 0;   // our own estimate says nothing of the ratio
    } else if (e.type == ev::kModelRequest) {
      pending_estimate = 0;
      const json& p = e.payload;
      if (p.contains("tokens_estimate") && p["tokens_estimate"].is_number()) {
        pending_estimate = p["tokens_estimate"].get<int64_t>();
      }
      if (reported > 0 && pending_estimate > 0) {
        sum_estimated += static_cast<double>(pending_estimate);
        sum_reported += static_cast<double>(reported);
        ++pairs;
      }
      reported = 0;
    }
  }
  if (pairs == 0 || sum_estimated <= 0) return 1.0;
  return std::clamp(sum_reported / sum_estimated, 0.5, 4.0);
}

void TokenRatioFit::add(const Event& e) {
  // fit_token_ratio walks backwards and pairs each request with the first response after it.
  if (e.type == ev::kModelRequest) {
    pending_estimate_ = 0;
    const json& p = e.payload;
    if (p.contains("tokens_estimate") && p["tokens_estimate"].is_number()) {
      pending_estimate_ = p["tokens_estimate"].get<int64_t>();
    }
    awaiting_response_ = true;
  } else if (e.type == ev::kModelResponse) {
    if (!awaiting_response_) return;
    awaiting_response_ = false;
    int64_t reported = 0;
    const json& p = e.payload;
    if (p.contains("usage") && p["usage"].is_object()) {
      const json& u = p["usage"];
      if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number()) {
        reported = u["prompt_tokens"].get<int64_t>();
      }
    }
    if (p.contains("purpose")) reported = 0;
    if (usage_is_estimate(p)) reported = 0;
    if (reported > 0 && pending_estimate_ > 0) {
      pairs_.push_back({pending_estimate_, reported});
      if (static_cast<int>(pairs_.size()) > max_pairs_) pairs_.pop_front();
    }
  }
}

double TokenRatioFit::ratio() const {
  double sum_estimated = 0;
  double sum_reported = 0;
  for (auto it = pairs_.rbegin(); it != pairs_.rend(); ++it) {  // newest first, as the walk adds
    sum_estimated += static_cast<double>(it->estimated);
    sum_reported += static_cast<double>(it->reported);
  }
  if (pairs_.empty() || sum_estimated <= 0) return 1.0;
  return std::clamp(sum_reported / sum_estimated, 0.5, 4.0);
}

}  // namespace marathon::context
