// A scripted tiny-task "model" that can hold one turn's reply until the test lets it go, so a test
// acts while a real runner is in the middle of a run (waiting on the model, its lock held, its log
// open).
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "loop/tiny_script.h"

namespace marathon::testing {

class HeldTurn {
 public:
  explicit HeldTurn(size_t turn) : turn_(turn) {}
  ~HeldTurn() { release(); }
  HeldTurn(const HeldTurn&) = delete;
  HeldTurn& operator=(const HeldTurn&) = delete;

  // The tiny script, holding the reply to `turn` while the gate is closed.
  ScriptedResponse answer(const json& request) {
    size_t turn = ScriptedLlmServer::assistant_turns(request);
    if (turn == turn_) {
      reached_ = true;
      while (!released_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return tiny_script(turn);
  }
  // True once the runner waits on the held turn (false after timeout_s).
  bool wait_reached(double timeout_s) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (!reached_ && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return reached_;
  }
  void release() { released_ = true; }

 private:
  size_t turn_;
  std::atomic<bool> reached_{false}, released_{false};
};

// A scripted server answering through `held`. It opens the gate before stopping, so a handler
// still holding a reply returns and the server's threads can be joined.
class GatedServer {
 public:
  explicit GatedServer(HeldTurn& held)
      : held_(held), server_([this](size_t, const json& r) { return held_.answer(r); }) {}
  ~GatedServer() {
    held_.release();  // a handler still waiting must return before the server joins it
    server_.stop();
  }
  ScriptedLlmServer& server() { return server_; }
  std::string base_url() const { return server_.base_url(); }

 private:
  HeldTurn& held_;
  ScriptedLlmServer server_;
};

}  // namespace marathon::testing
