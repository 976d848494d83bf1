// SIGINT / SIGTERM: acknowledged on stderr at once; the run pauses cleanly at the next step
// boundary (run.paused "interrupted", exit 130). A second signal while pausing restores the
// default action, so it ends the process at once.
#pragma once

namespace marathon {

void install_interrupt_handler();
bool interrupt_requested();

}  // namespace marathon
