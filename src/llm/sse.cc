#include "llm/sse.h"

namespace marathon::llm {

void SseReader::feed(std::string_view chunk) {
  bytes_ += chunk.size();
  for (char c : chunk) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // the \n of a \r\n pair
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      line(pending_);
      pending_.clear();
    } else {
      pending_ += c;
    }
  }
}

void SseReader::line(std::string_view l) {
  if (l.empty()) {  // the event is complete
    if (has_data_ || !current_.event.empty()) done_.push_back(std::move(current_));
    current_ = SseEvent{};
    has_data_ = false;
    return;
  }
  if (l.front() == ':') return;  // a comment (keep-alive)
  const size_t colon = l.find(':');
  std::string_view field = l.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : l.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "event") {
    current_.event = std::string(value);
  } else if (field == "data") {
    if (has_data_) current_.data += '\n';
    current_.data += value;
    has_data_ = true;
  }  // id, retry and unknown fields: not used
}

std::vector<SseEvent> SseReader::take() {
  std::vector<SseEvent> out;
  out.swap(done_);
  return out;
}

}  // namespace marathon::llm
