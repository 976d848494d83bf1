// Text from outside (the model's replies and tool calls, a command's or a candidate's output, a
// run's log, a request to the dashboard) as marathon prints it on a terminal: every byte a
// terminal could act on is written out as an escape instead. The one escaping function of every
// line marathon prints from such bytes: the live progress of `run`, the summary, `status`, `log`,
// `runs`, `eval`, and every log message (use_terminal_safe_log_format()). docs/security.md.
// Pure.
#pragma once

#include <string>
#include <string_view>

namespace marathon {

// `text` with nothing a terminal acts on: the C0 controls and DEL (ESC, BEL, CR, LF, BS, ...) as
// \xHH (\n, \r and \t as those two characters), the C1 controls U+0080..U+009F and the line,
// paragraph and bidirectional controls (U+2028, U+2029, U+200E, U+200F, U+202A..U+202E,
// U+2066..U+2069) as \uHHHH, and each byte of ill-formed UTF-8 as \xHH. Everything else, printable
// ASCII and well-formed UTF-8 among it, comes back unchanged: the result is one line and cannot
// start an escape sequence, move the cursor or end the line it is printed in.
std::string terminal_safe(std::string_view text);

// Text of several lines (a summary, a status report): each line through terminal_safe(), the
// line feeds between them kept.
std::string terminal_safe_lines(std::string_view text);

// Sets the default logger's format to `pattern` (spdlog's flags), where %v (the message) is
// written through terminal_safe(): a warning or an error quoting the model cannot reach the
// terminal raw, whichever call logged it.
void use_terminal_safe_log_format(const std::string& pattern);

}  // namespace marathon
