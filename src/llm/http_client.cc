#include "llm/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

namespace marathon::llm {
namespace {

std::once_flag g_curl_init;

struct BodySink {
  CURL* handle = nullptr;
  std::string* body = nullptr;
  const std::function<bool(std::string_view)>* on_data = nullptr;
};

// A 2xx body goes to on_data when it is set (a stream, read as it arrives); any other body (an
// error reply) is kept whole.
size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  if (sink->on_data != nullptr && *sink->on_data) {
    long status = 0;
    curl_easy_getinfo(sink->handle, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
      return (*sink->on_data)(std::string_view(data, size * n)) ? size * n : 0;
    }
  }
  sink->body->append(data, size * n);
  return size * n;
}

std::string trim(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) headers->clear();  // a new response (after 100-continue)
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    (*headers)[trim(name)] = trim(line.substr(colon + 1));
  }
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* cancel = static_cast<const std::function<bool()>*>(user);
  return (*cancel)() ? 1 : 0;  // non-zero: libcurl aborts with CURLE_ABORTED_BY_CALLBACK
}

// At least 1 ms: libcurl reads 0 as "no timeout".
long timeout_ms(double seconds) {
  double ms = seconds * 1000;
  if (!(ms >= 1)) return 1;
  if (ms > 1e9) return 1000000000L;
  return static_cast<long>(ms);
}

}  // namespace

HttpResponse http_post(const std::string& url, const std::map<std::string, std::string>& headers,
                       const std::string& body, const HttpOptions& options) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  HttpResponse out;
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) {
    out.transport_error = "curl_easy_init failed";
    return out;
  }
  curl_slist* list = nullptr;
  for (const auto& [name, value] : headers) {
    list = curl_slist_append(list, (name + ": " + value).c_str());
  }
  list = curl_slist_append(list, "Expect:");  // no 100-continue round trip for large prompts
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> list_guard(list, curl_slist_free_all);
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  BodySink sink{h, &out.body, &options.on_data};
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &out.headers);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms(options.timeout_s));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms(options.connect_timeout_s));
  if (options.cancel) {
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &options.cancel);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  }
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode
  CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) {
    out.status = 0;
    out.cancelled = rc == CURLE_ABORTED_BY_CALLBACK;
    out.transport_error = errbuf[0] ? std::string(errbuf) : curl_easy_strerror(rc);
    return out;
  }
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  out.status = static_cast<int>(status);
  return out;
}

std::string connect_problem(const std::string& url, double timeout_s) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return "curl_easy_init failed";
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms(timeout_s));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms(timeout_s));
  CURLcode rc = curl_easy_perform(h);
  if (rc == CURLE_OK) return "";
  return errbuf[0] ? std::string(errbuf) : curl_easy_strerror(rc);
}

}  // namespace marathon::llm
