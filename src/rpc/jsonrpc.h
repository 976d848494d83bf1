// JSON-RPC 2.0 (https://www.jsonrpc.org/specification) as both stdio servers speak it: one message
// per line. Parsing a line gives the messages it holds (a batch holds several) or the error object
// to answer with; building gives the response, error and notification objects. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/event.h"

namespace marathon::rpc {

// Error codes. -32768..-32000 are JSON-RPC's; each server adds its own in -32099..-32000
// (docs/protocol.md, docs/mcp.md). Numbers are never reused for another meaning.
enum class ErrorCode : int {
  kParseError = -32700,      // the line is not JSON
  kInvalidRequest = -32600,  // JSON, but not a request object
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
};

// Thrown by a method handler; the server answers with this error object. `code` is one of
// ErrorCode or a server's own code.
class RpcError : public std::runtime_error {
 public:
  RpcError(int code, const std::string& message, json data = nullptr)
      : std::runtime_error(message), code_(code), data_(std::move(data)) {}
  RpcError(ErrorCode code, const std::string& message, json data = nullptr)
      : RpcError(static_cast<int>(code), message, std::move(data)) {}
  int code() const { return code_; }
  const json& data() const { return data_; }

 private:
  int code_;
  json data_;
};

// One incoming message: a request (has an id), a notification (no id) or a response to a request
// of ours (result or error; the servers send none that expect an answer, so they ignore these).
struct Message {
  enum class Kind { kRequest, kNotification, kResponse };
  Kind kind = Kind::kRequest;
  json id;  // string, number or null (requests and responses)
  std::string method;
  json params;  // object, array or null (absent)
};

// A message of a line, or the error object to send back for it (its id when one could be read).
struct Parsed {
  std::optional<Message> message;
  json error_response;  // non-null when the entry is not a valid message
};

struct ParsedLine {
  bool batch = false;  // the line was an array
  std::vector<Parsed> entries;
};

// Parses one line with read_outside_json (core/json_reader.h). Never throws: not JSON (nested
// deeper than kMaxOutsideJsonDepth, or holding a number no double holds) is one entry answering
// -32700 with a null id; an empty array is one entry answering -32600; anything that is not a
// request, notification or response object is an entry answering -32600 (with its id when it has
// a valid one).
ParsedLine parse_line(std::string_view line);

json response(const json& id, json result);
json error_response(const json& id, int code, const std::string& message,
                    const json& data = nullptr);
json error_response(const json& id, const RpcError& e);
json notification(const std::string& method, json params);

// A message's params as an object: null (absent) is {}; an array is an invalid-params error.
json params_object(const Message& m);

}  // namespace marathon::rpc
