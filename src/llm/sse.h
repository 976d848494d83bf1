// Server-sent events (the text/event-stream format both providers stream replies in): bytes in,
// whole events out. Lines end in \n, \r\n or \r; `event:` names the event, `data:` lines are joined
// with \n, a blank line ends the event, `:` lines are comments. Pure; no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace marathon::llm {

struct SseEvent {
  std::string event;  // "" when the stream named none (OpenAI's chunks)
  std::string data;
};

class SseReader {
 public:
  // Appends a chunk as it arrived (an event, a line, even a \r\n pair may be split across chunks).
  void feed(std::string_view chunk);
  // The events completed so far, in order; each is handed out once.
  std::vector<SseEvent> take();
  // Bytes fed so far.
  size_t bytes() const { return bytes_; }

 private:
  void line(std::string_view l);
  std::string pending_;  // an unfinished line
  bool after_cr_ = false;
  SseEvent current_;
  bool has_data_ = false;
  std::vector<SseEvent> done_;
  size_t bytes_ = 0;
};

}  // namespace marathon::llm
