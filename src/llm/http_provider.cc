#include "llm/http_provider.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <random>
#include <thread>

#include "core/json_reader.h"
#include "llm/http_client.h"
#include "llm/http_errors.h"
#include "llm/reply_check.h"
#include "llm/retry.h"
#include "llm/sse.h"

namespace marathon::llm {

HttpProvider::HttpProvider(std::string name, ProviderConfig config,
                           std::unique_ptr<WireFormat> format)
    : name_(std::move(name)), config_(std::move(config)), format_(std::move(format)) {
  while (!config_.base_url.empty() && config_.base_url.back() == '/') config_.base_url.pop_back();
  if (!config_.api_key_env.empty()) {
    if (const char* key = std::getenv(config_.api_key_env.c_str())) api_key_ = key;
  }
  for (const auto& [prefix, price] : config_.prices) prices_.set(prefix, price);
}

std::string HttpProvider::url() const { return format_->endpoint(config_.base_url); }

namespace {

double jitter01() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

std::string excerpt(const std::string& s, size_t n = 300) {
  return s.size() > n ? s.substr(0, n) + "..." : s;
}

}  // namespace

Usage rough_usage_estimate(const ChatRequest& request, const json& reply_message) {
  Usage u;
  u.prompt_tokens =
      static_cast<int64_t>(request.messages.dump().size() / 4 +
                           (request.tools.empty() ? 0 : request.tools.dump().size() / 4));
  u.completion_tokens = static_cast<int64_t>(reply_message.dump().size() / 4);
  return u;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_left(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

// Waits `d` in slices of at most 100 ms, returning early (false) when `cancel` says stop.
bool sleep_unless_cancelled(std::chrono::milliseconds d, const std::function<bool()>& cancel) {
  const auto end = Clock::now() + d;
  while (Clock::now() < end) {
    if (cancel && cancel()) return false;
    auto slice = std::min<Clock::duration>(end - Clock::now(), std::chrono::milliseconds(100));
    std::this_thread::sleep_for(slice);
  }
  return !(cancel && cancel());
}

}  // namespace

ChatResult HttpProvider::chat(const ChatRequest& request) {
  ChatResult result;
  const std::string where = name_ + " " + url();
  const std::string body = format_->request_body(request).dump();
  std::map<std::string, std::string> headers = format_->headers(api_key_);
  for (const auto& [k, v] : config_.extra_headers) headers[k] = v;
  const auto started = Clock::now();
  // The call's total time bound, or the caller's budget when that leaves less.
  const bool budget_bound = request.time_left_s && *request.time_left_s < config_.total_timeout_s;
  const double bound_s = budget_bound ? *request.time_left_s : config_.total_timeout_s;
  const auto deadline = started + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(std::max(0.001, bound_s)));
  auto cancelled = [&] { return request.cancel && request.cancel(); };
  auto interrupted = [&]() {
    result.error = LlmError{ErrorKind::kInterrupted,
                            where + ": interrupted after " + std::to_string(result.attempts) +
                                " attempt(s); the request was abandoned",
                            0};
    return result;
  };

  HttpResponse resp;
  bool out_of_time = false;
  json streamed;  // the assembled body of a streamed 2xx reply
  for (int retry = 0;; ++retry) {
    if (cancelled()) return interrupted();
    HttpOptions options{std::min(config_.timeout_s, seconds_left(deadline)),
                        config_.connect_timeout_s,
                        request.cancel,
                        {}};
    std::unique_ptr<StreamAssembler> stream;
    SseReader reader;
    if (request.stream) {
      stream = format_->stream_assembler();
      options.on_data = [&](std::string_view chunk) {
        reader.feed(chunk);
        for (const SseEvent& e : reader.take()) {
          if (stream->malformed.empty() && stream->error.is_null()) stream->on_event(e);
        }
        return true;
      };
    }
    resp = http_post(url(), headers, body, options);
    result.attempts = retry + 1;
    if (resp.cancelled || cancelled()) return interrupted();
    if (stream && resp.status >= 200 && resp.status < 300) {
      // The reply is whole only once the stream ends properly; an error event is the error reply
      // it stands for (retried and classified the same way).
      reader.feed("\n\n");  // a last event without its blank line
      for (const SseEvent& e : reader.take()) {
        if (stream->malformed.empty() && stream->error.is_null()) stream->on_event(e);
      }
      if (!stream->error.is_null()) {
        resp.status = stream->error_status;
        resp.body = stream->error.dump();
      } else if (!stream->malformed.empty()) {
        resp.body = "";
        streamed = json{{"_stream_malformed", stream->malformed}};
      } else if (!stream->done) {
        resp.status = 0;
        resp.transport_error = fmt::format(
            "the stream ended before its end marker ({} bytes received)", reader.bytes());
      } else {
        streamed = stream->body();
      }
    }
    bool ok = resp.status >= 200 && resp.status < 300;
    bool retryable = should_retry(resp.status, resp.headers);
    if (ok || !retryable || retry >= config_.max_retries) break;
    double delay = retry_delay_s(retry, resp.headers, std::time(nullptr), config_.backoff_base_s,
                                 config_.backoff_max_s, config_.retry_after_max_s, jitter01());
    // No attempt starts after the deadline, and a wait that would end past it is not begun.
    if (delay + 0.5 >= seconds_left(deadline)) {
      out_of_time = true;
      // Bound by the caller's budget: wait it out, so that the caller finds the budget used up
      // (and stops on it) rather than asking again at once.
      if (budget_bound && !config_.sleep) {
        auto rest = std::chrono::milliseconds(static_cast<int64_t>(seconds_left(deadline) * 1000));
        if (!sleep_unless_cancelled(rest, request.cancel)) return interrupted();
      }
      break;
    }
    spdlog::warn("{}: {}; retry {}/{} in {:.1f} s", where,
                 resp.status == 0 ? resp.transport_error : "HTTP " + std::to_string(resp.status),
                 retry + 1, config_.max_retries, delay);
    auto wait = std::chrono::milliseconds(static_cast<int64_t>(delay * 1000));
    if (config_.sleep) {
      config_.sleep(wait);
    } else if (!sleep_unless_cancelled(wait, request.cancel)) {
      return interrupted();
    }
  }
  const std::string gave_up =
      !out_of_time   ? ""
      : budget_bound ? fmt::format(" (gave up: the run's time budget leaves {:.1f} s)", bound_s)
                     : fmt::format(" (gave up: the call's {:.0f} s total time bound)",
                                   config_.total_timeout_s);

  if (resp.status == 0) {
    result.error = LlmError{ErrorKind::kTransport,
                            where + ": no response after " + std::to_string(result.attempts) +
                                " attempt(s): " + resp.transport_error + gave_up,
                            0};
    return result;
  }
  if (resp.status < 200 || resp.status >= 300) {
    result.error =
        classify_http_error(resp.status, resp.body, where, config_.api_key_env, !api_key_.empty());
    result.error->message += gave_up;
    return result;
  }
  if (streamed.is_object() && streamed.contains("_stream_malformed")) {
    result.error = LlmError{
        ErrorKind::kMalformed,
        where + ": streamed reply: " +
            // The excerpt may cut a character or hold hostile bytes: replaced, not thrown.
            streamed["_stream_malformed"].dump(-1, ' ', false, json::error_handler_t::replace),
        resp.status};
    return result;
  }
  // Read bounded (nesting, number range) before anything copies, dumps or logs the body.
  OutsideJson read;
  if (request.stream) {
    read.value = std::move(streamed);
  } else {
    read = read_outside_json(resp.body);
  }
  if (!read.ok()) {
    result.error =
        LlmError{ErrorKind::kMalformed,
                 where + ": HTTP " + std::to_string(resp.status) +
                     " with a body that is not JSON the runtime reads (" + read.error + "; " +
                     std::to_string(resp.body.size()) + " bytes): " + excerpt(resp.body),
                 resp.status};
    return result;
  }
  json parsed = std::move(read.value);
  ParsedReply reply = format_->parse_reply(parsed);
  if (!reply.malformed.empty()) {
    ErrorKind kind =
        mentions_context_length(resp.body) ? ErrorKind::kContextLength : ErrorKind::kMalformed;
    result.error = LlmError{kind, where + ": " + reply.malformed, resp.status};
    return result;
  }
  result.message = std::move(reply.message);
  result.usage = reply.usage;
  result.finish_reason = reply.finish_reason;
  if (!reply.usage_problems.empty()) {
    // Usage that cannot be believed never reaches the budget: the runtime's estimate replaces it.
    result.usage_estimated = true;
    result.usage_problems = std::move(reply.usage_problems);
    result.usage_reported = std::move(reply.usage_reported);
    result.usage = config_.estimate_usage ? config_.estimate_usage(request, result.message)
                                          : rough_usage_estimate(request, result.message);
    result.usage.prompt_tokens = std::max<int64_t>(0, result.usage.prompt_tokens);
    result.usage.completion_tokens = std::max<int64_t>(0, result.usage.completion_tokens);
    result.usage.cache_read_tokens = result.usage.cache_write_tokens = 0;
    std::string what;
    for (const std::string& p : result.usage_problems) what += (what.empty() ? "" : "; ") + p;
    spdlog::warn("{}: usage not used ({}); estimated {} prompt + {} completion tokens instead",
                 where, what, result.usage.prompt_tokens, result.usage.completion_tokens);
  }
  result.problems = check_tool_calls(result.message, request.tools);
  for (const auto& p : result.problems) spdlog::warn("{}: malformed reply: {}", where, p.message);
  std::optional<Price> price = config_.price ? config_.price : prices_.lookup(request.model);
  if (price) result.cost_usd = cost_usd(result.usage, *price);
  return result;
}

}  // namespace marathon::llm
