// The control protocol's own error codes (docs/protocol.md), beside JSON-RPC's (rpc/jsonrpc.h).
// Numbers are stable: never renumbered, never reused for another meaning.
#pragma once

namespace marathon::control {

enum class ControlError : int {
  kNotInitialized = -32001,  // a method other than initialize before initialize
  kRunNotFound = -32002,     // params.run names no run this server serves
  kLogUnavailable = -32003,  // the run's log cannot be opened, read or written (message: why)
  kNotApplicable =
      -32004,  // the verb does not apply to the run as it is (e.g. stop a finished run)
};

inline constexpr const char* kProtocolVersion = "1";

}  // namespace marathon::control
