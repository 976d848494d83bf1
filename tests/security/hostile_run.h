// Helpers for driving the real binary on the hostile task (fixtures/hostile-task) with a scripted
// model, and for looking afterwards for what must never be found: a secret in any byte the run
// left (files, every SQLite row, log and exports, output, requests to the provider) or a process
// that outlived its sandbox.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "loop/loop_test_support.h"
#include "scripted_llm_server.h"

namespace marathon::testing {

inline fs::path hostile_task() { return source_dir() / "tests/security/fixtures/hostile-task"; }

// A value no test has used before (the secret itself, a process marker).
inline std::string unique_token(const std::string& tag) {
  std::random_device rd;
  return tag + std::to_string(::getpid()) + "q" + std::to_string(rd()) + std::to_string(rd());
}

inline json call(const std::string& name, json args) {
  return {{"name", name}, {"arguments", std::move(args)}};
}

// Every row of every table of a SQLite file, each value as text or bytes, concatenated (a secret
// split across overflow pages of the file is whole here).
inline std::string sqlite_dump(const fs::path& db) {
  std::string out;
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    return "cannot open " + db.string();
  }
  std::vector<std::string> tables;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(h, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  }
  sqlite3_finalize(st);
  for (const std::string& t : tables) {
    std::string q = "SELECT * FROM \"" + t + "\"";
    if (sqlite3_prepare_v2(h, q.c_str(), -1, &st, nullptr) != SQLITE_OK) continue;
    while (sqlite3_step(st) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        const void* p = sqlite3_column_blob(st, c);
        int n = sqlite3_column_bytes(st, c);
        if (p) out.append(static_cast<const char*>(p), static_cast<size_t>(n));
        out.push_back('\n');
      }
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return out;
}

// Where `needle` occurs in the bytes a run left behind: every file under `dir` (raw) and every row
// of every SQLite file there. Empty when nowhere.
inline std::vector<std::string> places_holding(const fs::path& dir, const std::string& needle) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::string bytes = read_text(it->path());
    if (bytes.find(needle) != std::string::npos) found.push_back(it->path().string());
    if (bytes.rfind("SQLite format 3", 0) == 0 &&
        sqlite_dump(it->path()).find(needle) != std::string::npos) {
      found.push_back(it->path().string() + " (rows)");
    }
  }
  return found;
}

// Live processes whose command line holds `needle`, as "pid: cmdline".
inline std::vector<std::string> processes_with(const std::string& needle) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (char& c : cmd) c = c == '\0' ? ' ' : c;
    if (cmd.find(needle) != std::string::npos) {
      found.push_back(e.path().filename().string() + ": " + cmd);
    }
  }
  return found;
}

// Waits (the kernel tears a PID namespace down asynchronously; generous for a loaded machine)
// until no live process holds `needle`; returns those still there.
inline std::vector<std::string> survivors(const std::string& needle, double seconds = 20) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::string> left = processes_with(needle);
  while (!left.empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = processes_with(needle);
  }
  return left;
}

inline std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

}  // namespace marathon::testing
