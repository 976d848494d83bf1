// The dashboard's HTTP server: cpp-httplib's, with every request read through a stream that holds
// it to limits httplib does not have. httplib bounds a Content-Length body (payload_max_length)
// but reads a chunked body, a request line and any number of headers whole and waits for each
// byte as long as the bytes keep coming; on a dashboard that any local process can reach, that
// is memory and threads for the taking. Here each request, from its first byte to the end of its
// body, gets at most `max_head_bytes` of request line and headers (431), `max_body_bytes` of
// body as sent, chunk framing included (413), and `max_request_s` seconds (408): past one, the
// reading stops there, the answer is a JSON {error} with that status, and the connection is
// closed. docs/security.md, docs/reliability.md.
#pragma once

#include <cstddef>
#include <memory>

namespace httplib {
class Server;
}

namespace marathon::serve {

struct RequestLimits {
  size_t max_head_bytes = 32 * 1024;
  size_t max_body_bytes = 64 * 1024 + 16 * 1024;  // the body limit and room for chunk framing
  double max_request_s = 10;
};

// An httplib::Server (configured like any other: routes, handlers, timeouts) whose connections
// are read under `limits`.
std::unique_ptr<httplib::Server> make_bounded_server(const RequestLimits& limits);

}  // namespace marathon::serve
