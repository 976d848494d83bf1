#include "rpc/jsonrpc.h"

#include "core/json_reader.h"

namespace marathon::rpc {

namespace {

bool valid_id(const json& id) { return id.is_string() || id.is_number() || id.is_null(); }

Parsed invalid(const json& id, const std::string& why) {
  return {std::nullopt, error_response(id, static_cast<int>(ErrorCode::kInvalidRequest),
                                       "invalid request: " + why)};
}

Parsed parse_entry(const json& j) {
  if (!j.is_object()) return invalid(nullptr, "a message is a JSON object");
  // The id to answer an invalid message with: its own when it is a valid id, else null.
  json id = nullptr;
  bool has_id = j.contains("id");
  if (has_id && valid_id(j["id"])) id = j["id"];
  auto version = j.find("jsonrpc");
  if (version == j.end() || *version != "2.0") {
    return invalid(id, "\"jsonrpc\" must be \"2.0\"");
  }
  if (has_id && !valid_id(j["id"]))
    return invalid(nullptr, "\"id\" must be a string, number or null");
  Message m;
  auto method = j.find("method");
  if (method == j.end()) {
    bool result = j.contains("result"), error = j.contains("error");
    if (has_id && result != error) {
      m.kind = Message::Kind::kResponse;
      m.id = id;
      return {m, nullptr};
    }
    return invalid(id, "a request needs \"method\"");
  }
  if (!method->is_string()) return invalid(id, "\"method\" must be a string");
  m.method = method->get<std::string>();
  auto params = j.find("params");
  if (params != j.end()) {
    if (!params->is_object() && !params->is_array()) {
      return invalid(id, "\"params\" must be an object or an array");
    }
    m.params = *params;
  }
  m.kind = has_id ? Message::Kind::kRequest : Message::Kind::kNotification;
  m.id = id;
  return {m, nullptr};
}

}  // namespace

ParsedLine parse_line(std::string_view line) {
  ParsedLine out;
  // Bounded while read: nesting past kMaxOutsideJsonDepth or a number no double holds is a parse
  // error like any other, before a message is built from the line.
  OutsideJson read = read_outside_json(line);
  if (!read.ok()) {
    out.entries.push_back(
        {std::nullopt, error_response(nullptr, static_cast<int>(ErrorCode::kParseError),
                                      "parse error: " + read.error)});
    return out;
  }
  json j = std::move(read.value);
  if (j.is_array()) {
    if (j.empty()) {
      out.entries.push_back(invalid(nullptr, "an empty batch"));
      return out;
    }
    out.batch = true;
    for (const json& e : j) out.entries.push_back(parse_entry(e));
    return out;
  }
  out.entries.push_back(parse_entry(j));
  return out;
}

json response(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json error_response(const json& id, int code, const std::string& message, const json& data) {
  json error = {{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

json error_response(const json& id, const RpcError& e) {
  return error_response(id, e.code(), e.what(), e.data());
}

json notification(const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

json params_object(const Message& m) {
  if (m.params.is_null()) return json::object();
  if (!m.params.is_object()) {
    throw RpcError(ErrorCode::kInvalidParams,
                   "params of " + m.method + " must be an object (named parameters)");
  }
  return m.params;
}

}  // namespace marathon::rpc
