// marathon export RUN_DIR [--best | --candidate ID] -o DIR: a candidate's files, as the log holds
// them, written into a new folder (what `marathon eval TASK --candidate DIR` evaluates).
// marathon export RUN_DIR [--best | --candidate ID] --patch [-o FILE]: the candidate as a unified
// diff against the run's starter files (`patch -p1` in a copy of the starter applies it).
// Every file is written through ConfinedDir (core/confined_dir.h); the run is only read.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/usage.h"
#include "core/confined_dir.h"
#include "core/event_store.h"
#include "core/load_state.h"
#include "core/run_dir.h"
#include "core/workspace_snapshot.h"
#include "loop/branches.h"
#include "serve/event_fields.h"
#include "serve/line_diff.h"

namespace marathon::cli {
namespace {

namespace fs = std::filesystem;

struct ExportArgs {
  std::string run_dir;
  std::string candidate;
  bool best = false;
  bool patch = false;
  std::string out;
};

// One run's log (the run, or one of its branches) folded, with its starter files.
struct Source {
  fs::path dir;
  int branch = 0;
  std::unique_ptr<EventStore> store;
  State state;
  WorkspaceFiles starter;
};

Source load_source(const fs::path& dir, int branch) {
  Source src;
  src.dir = dir;
  src.branch = branch;
  src.store =
      EventStore::open(existing_run_dir(dir).events_db().string(), EventStore::Mode::kReadOnly);
  // The starter is the workspace after the creation events (a fork and a replay start with the
  // original's), so every event is folded from the first.
  bool starter_done = false;
  LoadOptions o;
  o.use_checkpoints = false;
  o.observe = [&](const Event& e, const State& s) {
    if (starter_done) return;
    if (serve::is_creation_event(e)) {
      src.starter = s.workspace;
    } else {
      starter_done = true;
    }
  };
  src.state = load_state(*src.store, INT64_MAX, o);
  return src;
}

// What was recorded for `hash` in `s`: its score and correctness from the ledger's attempt.
std::string recorded_result(const State& s, const std::string& hash) {
  if (hash == s.best_candidate && s.best_score) {
    return fmt::format("{} {:.6g}, the run's best", s.goal.metric, *s.best_score);
  }
  for (auto it = s.ledger.rbegin(); it != s.ledger.rend(); ++it) {
    if (it->candidate != hash || !it->correct) continue;
    if (!*it->correct) return "incorrect" + (it->failure.empty() ? "" : ": " + it->failure);
    if (it->score) return fmt::format("{} {:.6g}", s.goal.metric, *it->score);
  }
  return "no recorded score";
}

// `patch -p1` form: a/PATH and b/PATH, /dev/null for a file added or removed; binary files named.
std::string patch_text(const EventStore& store, const WorkspaceFiles& from,
                       const WorkspaceFiles& to, int* binary) {
  std::map<std::string, int> paths;
  for (const auto& [p, sha] : from) paths[p] |= 1;
  for (const auto& [p, sha] : to) paths[p] |= 2;
  auto bytes = [&](const WorkspaceFiles& files, const std::string& p) -> std::string {
    auto it = files.find(p);
    if (it == files.end()) return "";
    std::optional<std::string> b = store.get_blob(it->second);
    if (!b) throw StoreError("the log holds no blob " + it->second + " for " + p);
    return *b;
  };
  auto is_binary = [](const std::string& b) { return b.find('\0') != std::string::npos; };
  std::string out;
  for (const auto& [p, in] : paths) {
    if (in == 3 && from.at(p) == to.at(p)) continue;
    std::string a = bytes(from, p), b = bytes(to, p);
    std::string a_name = (in & 1) ? "a/" + p : "/dev/null";
    std::string b_name = (in & 2) ? "b/" + p : "/dev/null";
    if (is_binary(a) || is_binary(b)) {
      out += fmt::format("Binary files {} and {} differ\n", a_name, b_name);
      ++*binary;
      continue;
    }
    out += serve::unified_diff(a, b, a_name, b_name);
  }
  return out;
}

// Writes `bytes` to the file `path` through ConfinedDir on its folder (made when missing).
void write_file(const fs::path& path, const std::string& bytes) {
  fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw StoreError(fmt::format("{}: cannot create: {}", parent.string(), ec.message()));
  FsResult<ConfinedDir> dir = ConfinedDir::open(parent);
  if (!dir.ok()) throw StoreError(parent.string() + ": " + dir.error().reason);
  FsResult<std::string> w = dir->write(path.filename().string(), bytes);
  if (!w.ok()) throw StoreError(path.string() + ": " + w.error().reason);
}

int do_export(const ExportArgs& a) {
  if (!a.patch && a.out.empty()) {
    spdlog::error("export: -o DIR names the folder to write the files to (or --patch for a diff)");
    return kExitUsage;
  }
  std::vector<Source> sources;
  try {
    sources.push_back(load_source(a.run_dir, 0));
    const State& s0 = sources[0].state;
    if (int k = branch_count(s0); k > 1 && s0.config.value("branch", 0) == 0) {
      for (int i = 1; i < k; ++i) sources.push_back(load_source(branch_dir(a.run_dir, i), i));
    }
  } catch (const StoreError& e) {
    spdlog::error("export: {}", e.what());
    return kExitFailure;
  }

  const Source* src = nullptr;
  std::string hash;
  if (!a.candidate.empty()) {
    std::vector<std::pair<const Source*, std::string>> matches;
    for (const Source& s : sources) {
      for (const auto& [h, files] : s.state.candidates) {
        if (h.compare(0, a.candidate.size(), a.candidate) != 0) continue;
        bool seen = false;
        for (const auto& m : matches) seen = seen || m.second == h;
        if (!seen) matches.emplace_back(&s, h);
      }
    }
    if (matches.empty()) {
      spdlog::error(
          "export: no candidate {} in {} (`marathon report {}` or the dashboard lists the "
          "candidates evaluated)",
          a.candidate, a.run_dir, a.run_dir);
      return kExitUsage;
    }
    if (matches.size() > 1) {
      spdlog::error("export: \"{}\" matches {} candidates; give more of the hash", a.candidate,
                    matches.size());
      return kExitUsage;
    }
    src = matches[0].first;
    hash = matches[0].second;
  } else {
    std::vector<State> states;
    for (const Source& s : sources) states.push_back(s.state);
    int b = sources.size() > 1 ? best_branch(states) : 0;
    if (b >= 0 && !sources[size_t(b)].state.best_candidate.empty()) {
      src = &sources[size_t(b)];
      hash = src->state.best_candidate;
    }
    if (src == nullptr) {
      spdlog::error(
          "export: {} has no best candidate yet (no correct evaluation); --candidate ID exports "
          "another",
          a.run_dir);
      return kExitUsage;
    }
  }
  auto files = src->state.candidates.find(hash);
  if (files == src->state.candidates.end()) {
    spdlog::error("export: the log of {} holds no files for candidate {}", src->dir.string(),
                  hash.substr(0, 12));
    return kExitFailure;
  }
  const std::string what =
      fmt::format("candidate {} of {}{} ({})", hash.substr(0, 12), a.run_dir,
                  sources.size() > 1 ? fmt::format(", branch {}", src->branch) : "",
                  recorded_result(src->state, hash));
  try {
    if (a.patch) {
      int binary = 0;
      std::string diff = patch_text(*src->store, src->starter, files->second, &binary);
      if (a.out.empty() || a.out == "-") {
        std::fwrite(diff.data(), 1, diff.size(), stdout);
        std::fflush(stdout);
      } else {
        write_file(a.out, diff);
        std::printf("marathon: %s as a patch against the starter written to %s (%zu bytes)\n",
                    what.c_str(), a.out.c_str(), diff.size());
      }
      if (binary > 0) {
        spdlog::warn("export: {} binary file(s) only named in the patch; -o DIR exports them",
                     binary);
      }
      return kExitOk;
    }
    std::error_code ec;
    if (fs::exists(a.out, ec) && !(fs::is_directory(a.out, ec) && fs::is_empty(a.out, ec))) {
      spdlog::error("export: -o {} exists and is not an empty folder; name a new one", a.out);
      return kExitUsage;
    }
    materialize_workspace(*src->store, files->second, a.out);
  } catch (const StoreError& e) {
    spdlog::error("export: {}", e.what());
    return kExitFailure;
  }
  std::printf("marathon: %s: %zu files written to %s\n", what.c_str(), files->second.size(),
              a.out.c_str());
  return kExitOk;
}

}  // namespace

void register_export(CLI::App& app) {
  auto a = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Write a candidate's files (default: the run's best) to a folder, or as a patch against the "
      "starter");
  cmd->add_option("RUN_DIR", a->run_dir, "The run directory (holds events.db)")
      ->required()
      ->check(existing_run_dir_check());
  CLI::Option* best = cmd->add_flag("--best", a->best,
                                    "The run's best candidate (the default; over every branch of "
                                    "a run with --branches)");
  cmd->add_option("--candidate", a->candidate,
                  "The candidate hash, or enough of its first characters to be unique")
      ->excludes(best);
  cmd->add_flag("--patch", a->patch,
                "Write a unified diff against the run's starter files instead (`patch -p1` "
                "applies it in a copy of the starter)");
  cmd->add_option("-o,--output", a->out,
                  "The folder to write the files to (new or empty); with --patch the file "
                  "(default: stdout)");
  cmd->footer(
      "Examples:\n"
      "  marathon export runs/kda1 -o best-kda              the best candidate's files\n"
      "  marathon eval tasks/kda --candidate best-kda       ... evaluated again\n"
      "  marathon export runs/kda1 --candidate 3fa2c1 -o c  another candidate (hash prefix)\n"
      "  marathon export runs/kda1 --patch > best.patch     a diff against the starter");
  cmd->callback([a] { exit_code = do_export(*a); });
}

}  // namespace marathon::cli
