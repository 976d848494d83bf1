// SIGINT / SIGTERM: the run pauses cleanly at the next step boundary (run.paused, exit 0). A second
// signal while pausing restores the default action, so it ends the process at once.
#pragma once

namespace marathon {

void install_interrupt_handler();
bool interrupt_requested();

}  // namespace marathon
