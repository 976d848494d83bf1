#include "cli/usage.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "core/event_store.h"
#include "core/run_dir.h"

namespace marathon::cli {

namespace {

// Edits (insert, delete, replace, swap of two neighbours) from a to b: "rnu" is one from "run".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::vector<std::string> subcommand_names(CLI::App* app) {
  std::vector<std::string> names;
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

}  // namespace

std::string closest_name(const std::string& word, const std::vector<std::string>& names) {
  if (word.empty()) return "";
  std::string prefixed;
  int prefixes = 0;
  for (const std::string& n : names) {
    if (n.compare(0, word.size(), word) == 0) {
      prefixed = n;
      ++prefixes;
    }
  }
  if (prefixes == 1) return prefixed;
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& n : names) {
    size_t d = edit_distance(word, n);
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  size_t allowed = std::max<size_t>(1, std::max(word.size(), best.size()) / 3);
  return best_d <= allowed ? best : "";
}

std::string unknown_command_message(CLI::App& app, int argc, const char* const* argv) {
  CLI::App* cur = &app;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string w = argv[i];
    if (w.empty() || w[0] == '-') return "";
    std::vector<CLI::App*> subs = cur->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return "";
    auto it = std::find_if(subs.begin(), subs.end(), [&](CLI::App* s) { return s->check_name(w); });
    if (it != subs.end()) {
      cur = *it;
      path += " " + w;
      continue;
    }
    // A word where the command takes a positional argument is that argument.
    if (!cur->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty()) {
      return "";
    }
    std::string msg = fmt::format("unknown command '{}'", (path + " " + w).substr(1));
    std::string near = closest_name(w, subcommand_names(cur));
    if (!near.empty()) msg += fmt::format("; did you mean '{}'?", (path + " " + near).substr(1));
    msg += fmt::format(" (`marathon{} --help` lists the commands)", path);
    return msg;
  }
  return "";
}

int exit_for_parse_error(CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) return app.exit(e);  // --help, --help-all, --version
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr &&
      std::string(e.what()).find("subcommand") != std::string::npos) {
    // `marathon` or `marathon goal` alone: the help of the command that needs a subcommand.
    std::cout << app.help();
    std::cerr << "marathon: " << e.what() << "\n";
    return kExitUsage;
  }
  std::cerr << "marathon: " << e.what() << "\n"
            << "Run with --help for more information.\n";
  return kExitUsage;
}

CLI::Validator existing_run_dir_check() {
  return CLI::Validator(
      [](std::string& dir) -> std::string {
        try {
          existing_run_dir(dir);
          return "";
        } catch (const StoreError& e) {
          return e.what();
        }
      },
      "", "RUN_DIR");
}

}  // namespace marathon::cli
