#include "eval/ray_jobs.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>

#include "core/json_reader.h"

namespace marathon::eval {

namespace {

std::once_flag g_curl_init;

size_t on_body(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

std::string short_body(const HttpReply& r) {
  std::string b = r.body.size() > 300 ? r.body.substr(0, 300) + "..." : r.body;
  return fmt::format("HTTP {}: {}", r.status, b);
}

}  // namespace

HttpReply http_call(const std::string& method, const std::string& url, const std::string& body,
                    const std::string& content_type, double timeout_s) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  HttpReply out;
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) {
    out.error = "curl_easy_init failed";
    return out;
  }
  CURL* h = curl.get();
  curl_slist* list = nullptr;
  if (!content_type.empty()) {
    list = curl_slist_append(list, ("Content-Type: " + content_type).c_str());
  }
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(list, curl_slist_free_all);
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "POST" || method == "PUT") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  if (list) curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out.body);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) {
    out.error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    out.body.clear();
    return out;
  }
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  out.status = static_cast<int>(status);
  return out;
}

JobState job_state(const std::string& s) {
  if (s == "PENDING") return JobState::kPending;
  if (s == "RUNNING") return JobState::kRunning;
  if (s == "SUCCEEDED") return JobState::kSucceeded;
  if (s == "FAILED") return JobState::kFailed;
  if (s == "STOPPED") return JobState::kStopped;
  return JobState::kUnknown;
}

bool terminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kStopped;
}

namespace {

// GET of a JSON object: nullopt with *error set on a transport failure, another status than 200
// or 404, or an answer that is not an object (`what` names it); nullopt alone on 404.
std::optional<json> get_object(const std::string& url, double timeout_s, const char* what,
                               std::string* error) {
  HttpReply r = http_call("GET", url, "", "", timeout_s);
  if (r.status == 404) return std::nullopt;
  if (r.status != 200) {
    *error = r.status == 0 ? r.error : short_body(r);
    return std::nullopt;
  }
  json j = read_outside_json(r.body).value;
  if (!j.is_object()) {
    *error = fmt::format("{} is not a JSON object", what);
    return std::nullopt;
  }
  return j;
}

}  // namespace

std::optional<json> RayJobsApi::job(const std::string& id, std::string* error) const {
  return get_object(base_ + "/api/jobs/" + id, timeout_s_, "the job's details", error);
}

std::optional<json> RayJobsApi::nodes(std::string* error) const {
  std::optional<json> j =
      get_object(base_ + "/api/v0/nodes?limit=10000", timeout_s_, "the node list", error);
  if (!j && error->empty()) *error = "the head has no state API (GET /api/v0/nodes: 404)";
  return j;
}

std::vector<RayNode> ray_nodes(const json& answer) {
  std::vector<RayNode> out;
  const json* list = &answer;
  for (const char* k : {"data", "result", "result"}) {
    if (!list->is_object() || !list->contains(k)) return out;
    list = &(*list)[k];
  }
  if (!list->is_array()) return out;
  for (const json& n : *list) {
    if (!n.is_object()) continue;
    RayNode node;
    if (n.contains("node_id") && n["node_id"].is_string()) node.id = n["node_id"];
    if (n.contains("node_ip") && n["node_ip"].is_string()) node.ip = n["node_ip"];
    node.alive = n.contains("state") && n["state"] == "ALIVE";
    if (!node.id.empty()) out.push_back(std::move(node));
  }
  return out;
}

std::optional<RayNode> other_node(const std::vector<RayNode>& nodes, const std::string& lost_id) {
  std::string lost_ip;
  for (const RayNode& n : nodes) {
    if (n.id == lost_id) lost_ip = n.ip;
  }
  for (const RayNode& n : nodes) {
    if (n.alive && n.id != lost_id && !n.ip.empty() && n.ip != lost_ip) return n;
  }
  return std::nullopt;
}

void pin_to_node(json& request, const std::string& ip) {
  request["entrypoint_resources"] = {{"node:" + ip, 0.001}};
}

bool RayJobsApi::package_exists(const std::string& name, std::string* error) const {
  HttpReply r = http_call("GET", base_ + "/api/packages/gcs/" + name, "", "", timeout_s_);
  if (r.status == 200) return true;
  if (r.status != 404) *error = r.status == 0 ? r.error : short_body(r);
  return false;
}

bool RayJobsApi::put_package(const std::string& name, const std::string& zip,
                             std::string* error) const {
  HttpReply r = http_call("PUT", base_ + "/api/packages/gcs/" + name, zip,
                          "application/octet-stream", std::max(timeout_s_, 120.0));
  if (r.status == 200) return true;
  *error = r.status == 0 ? r.error : short_body(r);
  return false;
}

bool RayJobsApi::submit(const json& request, bool* already, std::string* error) const {
  *already = false;
  HttpReply r =
      http_call("POST", base_ + "/api/jobs/", request.dump(), "application/json", timeout_s_);
  if (r.status == 200) return true;
  if (r.status == 400 && r.body.find("already exists") != std::string::npos) {
    *already = true;
    return true;
  }
  *error = r.status == 0 ? r.error : short_body(r);
  return false;
}

std::optional<std::string> RayJobsApi::logs(const std::string& id, std::string* error) const {
  HttpReply r = http_call("GET", base_ + "/api/jobs/" + id + "/logs", "", "", timeout_s_);
  if (r.status != 200) {
    *error = r.status == 0 ? r.error : short_body(r);
    return std::nullopt;
  }
  json j = read_outside_json(r.body).value;
  if (!j.is_object() || !j.contains("logs") || !j["logs"].is_string()) {
    *error = "the job's logs are not {\"logs\": text}";
    return std::nullopt;
  }
  return j["logs"].get<std::string>();
}

bool RayJobsApi::stop(const std::string& id, std::string* error) const {
  HttpReply r = http_call("POST", base_ + "/api/jobs/" + id + "/stop", "", "", timeout_s_);
  if (r.status == 200) return true;
  *error = r.status == 0 ? r.error : short_body(r);
  return false;
}

std::optional<std::vector<json>> RayJobsApi::list(std::string* error) const {
  HttpReply r = http_call("GET", base_ + "/api/jobs/", "", "", timeout_s_);
  if (r.status != 200) {
    *error = r.status == 0 ? r.error : short_body(r);
    return std::nullopt;
  }
  json j = read_outside_json(r.body).value;
  if (!j.is_array()) {
    *error = "the job list is not a JSON array";
    return std::nullopt;
  }
  return j.get<std::vector<json>>();
}

std::optional<json> eval_result_from_logs(const std::string& logs, const std::string& candidate) {
  std::istringstream in(logs);
  std::string line;
  std::optional<json> found;
  while (std::getline(in, line)) {
    size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos || line[a] != '{') continue;
    json j = read_outside_json(std::string_view(line).substr(a)).value;
    if (!j.is_object() || !j.contains("eval_status") || !j["eval_status"].is_string()) continue;
    if (j.value("candidate", "") != candidate) continue;
    found = std::move(j);
  }
  return found;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace marathon::eval
