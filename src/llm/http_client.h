// HttpClient: one blocking HTTPS POST through libcurl. Reports transport failures as values.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace marathon::llm {

struct HttpResponse {
  int status = 0;                              // 0: no response (see transport_error)
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string transport_error;  // curl's description when status == 0
  bool cancelled = false;       // `cancel` said stop: the transfer was abandoned (status 0)
};

struct HttpOptions {
  double timeout_s = 120;  // the whole request; must be > 0
  double connect_timeout_s = 20;
  // Polled by libcurl's progress callback (several times a second while data moves, about once a
  // second while the connection is idle): true abandons the transfer.
  std::function<bool()> cancel;
  // Set: each chunk of a 2xx body is handed here as it arrives (server-sent events) instead of
  // being kept in HttpResponse::body; returning false abandons the transfer (a malformed stream).
  std::function<bool(std::string_view chunk)> on_data;
};

// Posts `body` to `url` with `headers` ("Name: value" pairs). Thread-safe; one curl handle per
// call.
HttpResponse http_post(const std::string& url, const std::map<std::string, std::string>& headers,
                       const std::string& body, const HttpOptions& options);

// Whether a connection to `url`'s host and port can be made (TCP, and TLS for https) within
// `timeout_s`, sending no request: "" when it can, else curl's reason. A run's preflight.
std::string connect_problem(const std::string& url, double timeout_s);

}  // namespace marathon::llm
