#include "serve/server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "control/compact_verb.h"
#include "control/goal_verb.h"
#include "core/event_store.h"
#include "core/json_reader.h"
#include "core/utf8.h"
#include "serve/assets.h"
#include "serve/bounded_server.h"
#include "serve/page.h"
#include "serve/report.h"
#include "serve/run_json.h"

namespace marathon::serve {

namespace {

using httplib::Request;
using httplib::Response;

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(dump(body), "application/json");
}

void send_error(Response& res, int status, const std::string& what) {
  send_json(res, status, {{"error", what}});
}

// 400 or 404 for a lookup that found no run; true when it found one.
bool found(RunLookup r, const std::string& id, Response& res) {
  if (r == RunLookup::kBadId) {
    send_error(res, 400,
               "bad run id '" + valid_utf8(id) +
                   "': a run id is the name of a folder directly under the runs folder: 1 to "
                   "128 of A-Z a-z 0-9 . _ -, starting with a letter or digit");
    return false;
  }
  if (r == RunLookup::kNotFound) {
    send_error(res, 404, "no run '" + id + "' in the runs folder");
    return false;
  }
  return true;
}

// A query parameter as a non-negative integer: nullopt (and a 400 sent) when it is not one.
std::optional<int64_t> int_param(const Request& req, Response& res, const char* name,
                                 int64_t fallback, int64_t max) {
  if (!req.has_param(name)) return fallback;
  const std::string v = req.get_param_value(name);
  int64_t n = 0;
  bool ok = !v.empty() && v.size() <= 18;
  for (char c : v) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) n = n * 10 + (c - '0');
  }
  if (!ok || n > max) {
    send_error(res, 400,
               std::string("query parameter '") + name + "' must be an integer from 0 to " +
                   std::to_string(max));
    return std::nullopt;
  }
  return n;
}

std::vector<std::string> split_types(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t comma = s.find(',', start);
    std::string t = s.substr(start, comma == std::string::npos ? s.npos : comma - start);
    if (!t.empty()) out.push_back(t);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string bearer_of(const Request& req) {
  std::string auth = req.get_header_value("Authorization");
  if (auth.rfind("Bearer ", 0) == 0) return auth.substr(7);
  return req.has_param("token") ? req.get_param_value("token") : "";
}

// A JSON request body as an object: nullopt (and a 400 sent) when it is not one.
std::optional<json> body_object(const Request& req, Response& res) {
  json body = read_outside_json(req.body).value;
  if (body.is_discarded() || !body.is_object()) {
    send_error(res, 400, "the request body must be a JSON object");
    return std::nullopt;
  }
  return body;
}

int status_of(control::VerbStatus s) {
  switch (s) {
    case control::VerbStatus::kDone:
      return 200;
    case control::VerbStatus::kBadInput:
      return 400;
    case control::VerbStatus::kWrongState:
    case control::VerbStatus::kNoRun:
      return 409;
  }
  return 500;
}

std::string sse(const char* event, int64_t id, const json& data) {
  return "id: " + std::to_string(id) + "\nevent: " + event + "\ndata: " + dump(data) + "\n\n";
}

}  // namespace

Dashboard::Dashboard(ServeOptions options)
    : options_(std::move(options)),
      views_(RunCatalog(options_.runs_dir)),
      // Chunked bodies, headers and the request's time bounded too (bounded_server.h); the body
      // limit leaves room for chunk framing, the Content-Length limit below is exact.
      server_(make_bounded_server({.max_body_bytes = options_.max_body_bytes + 16 * 1024})) {
  access_.loopback = is_loopback_address(options_.bind);
  access_.token = options_.token;
  if (!access_.loopback && access_.token.empty()) access_.token = generate_token();
  int threads = std::max(4, options_.threads);
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_->set_payload_max_length(options_.max_body_bytes);
  server_->set_keep_alive_max_count(1000);
  routes();
}

Dashboard::~Dashboard() { stop(); }

int Dashboard::bind() {
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.bind);
  } else if (server_->bind_to_port(options_.bind, options_.port)) {
    port_ = options_.port;
  } else {
    port_ = -1;
  }
  if (port_ <= 0) {
    throw std::runtime_error("cannot listen on " + options_.bind + " port " +
                             std::to_string(options_.port) +
                             " (in use, or not an address of this machine)");
  }
  return port_;
}

void Dashboard::serve() {
  serving_ = true;
  // The runs' series are built in the background from the start, so that a page opened a moment
  // later finds them ready (a long run's first fold reads every event of its log).
  std::thread warm([this] {
    for (const std::string& id : views_.catalog().list()) {
      if (stopping_) break;
      try {
        views_.with(id, Need::kSeries, [](RunView&, RunPhase) {});
      } catch (const std::exception& e) {
        spdlog::warn("serve: run {}: {}", id, e.what());
      }
    }
  });
  if (!stopping_) server_->listen_after_bind();
  served_ = true;
  warm.join();
}

void Dashboard::stop() {
  stopping_ = true;
  // httplib's stop() does nothing before the server runs: wait for it to run (or to have
  // returned) when serve() has been called, so that a stop right after the start is not lost.
  if (serving_) {
    while (!server_->is_running() && !served_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  server_->stop();
}

std::string Dashboard::url() const {
  std::string host =
      options_.bind.find(':') != std::string::npos ? "[" + options_.bind + "]" : options_.bind;
  std::string u = "http://" + host + ":" + std::to_string(port_) + "/";
  if (!access_.token.empty()) u += "?token=" + access_.token;
  return u;
}

void Dashboard::routes() {
  httplib::Server& s = *server_;

  s.set_pre_routing_handler([this](const Request& req, Response& res) {
    bool api = req.path.rfind("/api/", 0) == 0;
    RequestFacts facts;
    std::string host = req.get_header_value("Host"), origin = req.get_header_value("Origin");
    std::string bearer = bearer_of(req), type = req.get_header_value("Content-Type");
    facts.host = host;
    facts.origin = origin;
    facts.bearer = bearer;
    facts.content_type = type;
    facts.write = req.method != "GET" && req.method != "HEAD";
    AccessPolicy policy = access_;
    if (!api) policy.token.clear();  // the page and its files hold no data
    Denial d = check_access(policy, facts);
    if (d == Denial::kNone) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, http_status(d), explain(d));
    return httplib::Server::HandlerResponse::Handled;
  });

  s.set_error_handler(httplib::Server::HandlerWithResponse([](const Request& req, Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string what = res.status == 404   ? "no such page or API route: " + req.path
                       : res.status == 413 ? "the request body is larger than the limit"
                       : res.status == 405 ? "method not allowed"
                                           : "bad request";
    send_error(res, res.status, valid_utf8(what));
    return httplib::Server::HandlerResponse::Handled;
  }));

  s.set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const StoreError& e) {
      what = e.what();
    } catch (const std::exception& e) {
      what = std::string("internal error: ") + e.what();
    } catch (...) {
    }
    spdlog::warn("serve: {}", what);
    send_error(res, 500, valid_utf8(what));
  });

  auto asset = [&s](const char* path, AssetId id, const char* type) {
    s.Get(path, [id, type](const Request&, Response& res) {
      std::string_view a = embedded_asset(id);
      res.set_header("Cache-Control", "no-cache");
      res.set_content(std::string(a), type);
    });
  };
  asset("/assets/app.js", AssetId::kAppJs, "text/javascript; charset=utf-8");
  asset("/assets/chart.js", AssetId::kChartJs, "text/javascript; charset=utf-8");
  asset("/assets/style.css", AssetId::kStyleCss, "text/css; charset=utf-8");
  s.Get("/", [](const Request&, Response& res) {
    res.set_header("Content-Security-Policy", served_page_csp());
    res.set_header("Cache-Control", "no-cache");
    res.set_content(page_html(PageMode::kServed), "text/html; charset=utf-8");
  });

  s.Get("/api/runs", [this](const Request&, Response& res) {
    send_json(res, 200, {{"runs", views_.rows(now_us())}, {"now_us", now_us()}});
  });

  // /api/runs/ID and what is under it. The id is matched as any text up to the next "/" (after
  // httplib's percent-decoding) and then checked, so an escape attempt gets a 400 that says why.
  s.Get(R"(/api/runs/([^/]*))", [this](const Request& req, Response& res) {
    std::string id = req.matches[1];
    std::string out;
    RunLookup r = views_.with(id, Need::kSeries, [&](RunView& v, RunPhase phase) {
      out = run_detail(id, v, phase, now_us());
    });
    if (!found(r, id, res)) return;
    res.set_header("Cache-Control", "no-store");
    res.set_content(out, "application/json");
  });

  s.Get(R"(/api/runs/([^/]*)/events)", [this](const Request& req, Response& res) {
    std::string id = req.matches[1];
    auto after = int_param(req, res, "after", 0, INT64_MAX / 2);
    if (!after) return;
    auto limit = int_param(req, res, "limit", 200, 5000);
    if (!limit) return;
    std::vector<std::string> types = req.has_param("types")
                                         ? split_types(req.get_param_value("types"))
                                         : std::vector<std::string>{};
    json out;
    RunLookup r = views_.with(id, Need::kState, [&](RunView& v, RunPhase) {
      out = {{"events", event_lines(v.store(), *after, size_t(*limit), types)},
             {"last_seq", v.state().last_seq}};
    });
    if (found(r, id, res)) send_json(res, 200, out);
  });

  s.Get(R"(/api/runs/([^/]*)/candidates/([^/]*))", [this](const Request& req, Response& res) {
    std::string id = req.matches[1], hash = req.matches[2];
    bool hex = hash.size() == 64 && hash.find_first_not_of("0123456789abcdef") == std::string::npos;
    std::optional<json> out;
    RunLookup r = views_.with(id, Need::kSeries, [&](RunView& v, RunPhase) {
      if (hex) out = candidate_json(v, hash);
    });
    if (!found(r, id, res)) return;
    if (!hex) {
      send_error(res, 400, "a candidate is named by its hash: 64 lowercase hex digits");
    } else if (!out) {
      send_error(res, 404, "run '" + id + "' has no candidate " + hash);
    } else {
      send_json(res, 200, *out);
    }
  });

  s.Get(R"(/api/runs/([^/]*)/report)", [this](const Request& req, Response& res) {
    std::string id = req.matches[1];
    std::string html;
    RunLookup r = views_.with(id, Need::kSeries, [&](RunView& v, RunPhase phase) {
      html = page_html(PageMode::kReport, report_data(id, v, phase, now_us()));
    });
    if (!found(r, id, res)) return;
    res.set_header("Content-Disposition", "attachment; filename=\"" + id + "-report.html\"");
    res.set_content(html, "text/html; charset=utf-8");
  });

  s.Get(R"(/api/runs/([^/]*)/stream)", [this](const Request& req, Response& res) {
    std::string id = req.matches[1];
    auto after = int_param(req, res, "after", 0, INT64_MAX / 2);
    if (!after) return;
    if (!found(views_.catalog().find(id, nullptr), id, res)) return;
    struct Stream {
      int64_t cursor;
      std::string phase;
      std::chrono::steady_clock::time_point last_write;
    };
    auto st = std::make_shared<Stream>(Stream{*after, "", {}});
    res.set_header("Cache-Control", "no-store");
    res.set_chunked_content_provider("text/event-stream", [this, id, st](size_t,
                                                                         httplib::DataSink& sink) {
      std::string msg;
      try {
        views_.with(id, Need::kSeries, [&](RunView& v, RunPhase phase) {
          std::string p = to_string(phase);
          if (v.state().last_seq > st->cursor || p != st->phase || st->phase.empty()) {
            msg = sse("update", v.state().last_seq, run_update(id, v, phase, st->cursor, now_us()));
            st->cursor = v.state().last_seq;
            st->phase = p;
          }
        });
      } catch (const std::exception& e) {
        msg = sse("failure", st->cursor, {{"error", valid_utf8(e.what())}});
      }
      auto now = std::chrono::steady_clock::now();
      if (msg.empty() && now - st->last_write > std::chrono::seconds(15)) msg = ": alive\n\n";
      if (!msg.empty()) {
        if (!sink.write(msg.data(), msg.size())) return false;
        st->last_write = now;
      }
      for (double waited = 0; waited < options_.stream_poll_s && !stopping_; waited += 0.05) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (stopping_) {
        sink.done();
        return false;
      }
      return true;
    });
  });

  s.Get("/api/stream/runs", [this](const Request&, Response& res) {
    struct Stream {
      std::string last;
      std::chrono::steady_clock::time_point last_write;
    };
    auto st = std::make_shared<Stream>();
    res.set_header("Cache-Control", "no-store");
    res.set_chunked_content_provider("text/event-stream", [this, st](size_t,
                                                                     httplib::DataSink& sink) {
      int64_t now = now_us();
      json rows = views_.rows(now);
      // Sent when something other than the ages changed (the page ages rows itself).
      json key = rows;
      for (json& r : key) {
        if (r.contains("last_event")) r["last_event"].erase("age_s");
      }
      std::string k = dump(key);
      std::string msg;
      auto t = std::chrono::steady_clock::now();
      if (k != st->last) {
        msg = sse("runs", 0, {{"runs", rows}, {"now_us", now}});
        st->last = k;
      } else if (t - st->last_write > std::chrono::seconds(15)) {
        msg = ": alive\n\n";
      }
      if (!msg.empty()) {
        if (!sink.write(msg.data(), msg.size())) return false;
        st->last_write = t;
      }
      for (double waited = 0; waited < 4 * options_.stream_poll_s && !stopping_; waited += 0.05) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (stopping_) {
        sink.done();
        return false;
      }
      return true;
    });
  });

  // Anything else under /api/runs/: a bad id says so; a good one names a route that does not exist.
  s.Get(R"(/api/runs/(.*))", [this](const Request& req, Response& res) {
    std::string rest = req.matches[1];
    std::string id = rest.substr(0, rest.find('/'));
    if (found(views_.catalog().find(id, nullptr), id, res)) {
      send_error(res, 404, "no such API route: " + valid_utf8(req.path));
    }
  });

  s.Post(R"(/api/runs/([^/]*)/goal)", [this](const Request& req, Response& res) {
    std::string id = req.matches[1];
    std::filesystem::path dir;
    if (!found(views_.catalog().find(id, &dir), id, res)) return;
    auto body = body_object(req, res);
    if (!body) return;
    const json* verb = body->contains("verb") ? &(*body)["verb"] : nullptr;
    std::optional<control::GoalVerb> v;
    if (verb && verb->is_string()) v = control::goal_verb_from_string(verb->get<std::string>());
    if (!v) {
      send_error(res, 400, "'verb' must be one of " + control::goal_verb_names());
      return;
    }
    std::string text;
    if (body->contains("text")) {
      if (!(*body)["text"].is_string()) {
        send_error(res, 400, "'text' must be a string");
        return;
      }
      text = (*body)["text"].get<std::string>();
    }
    control::VerbResult r = control::change_goal(dir, *v, text);
    if (r.status != control::VerbStatus::kDone) {
      send_error(res, status_of(r.status), valid_utf8(r.message));
      return;
    }
    send_json(res, 200,
              {{"ok", true},
               {"seq", r.seq},
               {"goal", {{"objective", r.state.goal.objective}, {"status", r.state.goal.status}}}});
  });

  s.Post(R"(/api/runs/([^/]*)/compact)", [this](const Request& req, Response& res) {
    std::string id = req.matches[1];
    std::filesystem::path dir;
    if (!found(views_.catalog().find(id, &dir), id, res)) return;
    auto body = body_object(req, res);
    if (!body) return;
    bool now = false;
    if (body->contains("now")) {
      if (!(*body)["now"].is_boolean()) {
        send_error(res, 400, "'now' must be true or false");
        return;
      }
      now = (*body)["now"].get<bool>();
    }
    control::CompactResult r = control::compact_run(dir, now);
    if (r.status != control::VerbStatus::kDone) {
      send_error(res, status_of(r.status), valid_utf8(r.message));
      return;
    }
    send_json(res, 200,
              {{"ok", true},
               {"seq", r.seq},
               {"compacted_now", r.compacted_now},
               {"outcome", r.outcome},
               {"tokens_before", r.tokens_before},
               {"tokens_after", r.tokens_after}});
  });
}

}  // namespace marathon::serve
