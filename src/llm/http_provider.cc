#include "llm/http_provider.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <ctime>
#include <random>
#include <thread>

#include "llm/http_client.h"
#include "llm/http_errors.h"
#include "llm/reply_check.h"
#include "llm/retry.h"

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

std::string HttpProvider::url() const { return config_.base_url + format_->path(); }

namespace {

double jitter01() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

std::string excerpt(const std::string& s, size_t n = 300) {
  return s.size() > n ? s.substr(0, n) + "..." : s;
}

}  // namespace

ChatResult HttpProvider::chat(const ChatRequest& request) {
  ChatResult result;
  const std::string where = name_ + " " + url();
  const std::string body = format_->request_body(request).dump();
  std::map<std::string, std::string> headers = format_->headers(api_key_);
  for (const auto& [k, v] : config_.extra_headers) headers[k] = v;
  HttpOptions options{config_.timeout_s, config_.connect_timeout_s};
  auto sleep = config_.sleep ? config_.sleep
                             : [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };

  HttpResponse resp;
  for (int retry = 0;; ++retry) {
    resp = http_post(url(), headers, body, options);
    result.attempts = retry + 1;
    bool ok = resp.status >= 200 && resp.status < 300;
    bool retryable = resp.status == 0 || is_retryable_status(resp.status);
    if (ok || !retryable || retry >= config_.max_retries) break;
    double delay = retry_delay_s(retry, resp.headers, std::time(nullptr), config_.backoff_base_s,
                                 config_.backoff_max_s, config_.retry_after_max_s, jitter01());
    spdlog::warn("{}: {}; retry {}/{} in {:.1f} s", where,
                 resp.status == 0 ? resp.transport_error : "HTTP " + std::to_string(resp.status),
                 retry + 1, config_.max_retries, delay);
    sleep(std::chrono::milliseconds(static_cast<int64_t>(delay * 1000)));
  }

  if (resp.status == 0) {
    result.error = LlmError{ErrorKind::kTransport,
                            where + ": no response after " + std::to_string(result.attempts) +
                                " attempt(s): " + resp.transport_error,
                            0};
    return result;
  }
  if (resp.status < 200 || resp.status >= 300) {
    result.error =
        classify_http_error(resp.status, resp.body, where, config_.api_key_env, !api_key_.empty());
    return result;
  }
  json parsed = json::parse(resp.body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    result.error = LlmError{ErrorKind::kMalformed,
                            where + ": HTTP " + std::to_string(resp.status) +
                                " with a body that is not JSON (" +
                                std::to_string(resp.body.size()) + " bytes): " + excerpt(resp.body),
                            resp.status};
    return result;
  }
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
  result.problems = check_tool_calls(result.message, request.tools);
  for (const auto& p : result.problems) spdlog::warn("{}: malformed reply: {}", where, p.message);
  std::optional<Price> price = config_.price ? config_.price : prices_.lookup(request.model);
  if (price) result.cost_usd = cost_usd(result.usage, *price);
  return result;
}

}  // namespace marathon::llm
