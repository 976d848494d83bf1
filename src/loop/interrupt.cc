#include "loop/interrupt.h"

#include <unistd.h>

#include <csignal>

namespace marathon {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;

// Said at once, from the handler (write(2) is async-signal-safe): the step in flight may be an
// evaluation that takes minutes, and a silent terminal invites a second Ctrl-C.
constexpr char kAck[] =
    "\nmarathon: stopping after the step in flight (an evaluation runs to its end); Ctrl-C again "
    "to abandon it. `marathon resume RUN_DIR` carries on.\n";

void on_signal(int) {
  g_interrupted = 1;
  ssize_t ignored = write(STDERR_FILENO, kAck, sizeof kAck - 1);
  (void)ignored;
}

}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // the second signal takes the default action
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupt_requested() { return g_interrupted != 0; }

}  // namespace marathon
