#include "taskgen/repo_snapshot.h"

#include <fmt/format.h>

#include <algorithm>

#include "sandbox/launcher.h"

namespace marathon::taskgen {

namespace fs = std::filesystem;

namespace {

struct ToolRun {
  bool ok = false;
  std::string out;
  std::string why;  // when !ok: the exit status and the tool's message
};

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t b = s.find_first_not_of(" \n");
  return b == std::string::npos ? "" : s.substr(b);
}

ToolRun host_tool(std::vector<std::string> argv, double timeout_s = 300) {
  sandbox::LaunchSpec spec;
  spec.profile = sandbox::Profile::kHostTool;
  spec.isolation = sandbox::Isolation::kNone;
  spec.argv = std::move(argv);
  spec.env = sandbox::host_environment();  // git's own settings; secret names are dropped
  spec.timeout_s = timeout_s;
  sandbox::LaunchResult r = sandbox::launch(spec);
  ToolRun t;
  t.out = r.out;
  if (!r.started) {
    t.why = r.setup_error;
  } else if (r.timed_out) {
    t.why = fmt::format("did not finish in {} s", timeout_s);
  } else if (r.exit_code != 0 || r.signal != 0) {
    std::string err = trim(r.err);
    if (err.size() > 600) err = err.substr(0, 600) + "...";
    t.why = fmt::format("exit status {}{}", r.signal ? 128 + r.signal : r.exit_code,
                        err.empty() ? "" : ": " + err);
  } else {
    t.ok = true;
  }
  return t;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string l = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!trim(l).empty()) out.push_back(l);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

}  // namespace

RepoSnapshot snapshot_repo(const fs::path& repo_in, const fs::path& dest) {
  std::error_code ec;
  RepoSnapshot s;
  s.repo = fs::absolute(repo_in, ec).lexically_normal();
  const std::string where = "--repo " + repo_in.string();
  fs::file_status st = fs::status(s.repo, ec);
  if (!fs::exists(st)) throw InitError(where + ": no such folder");
  if (!fs::is_directory(st)) throw InitError(where + ": not a folder");
  const std::string r = s.repo.string();

  ToolRun inside = host_tool({"git", "-C", r, "rev-parse", "--show-prefix"}, 60);
  if (!inside.ok) {
    throw InitError(fmt::format(
        "{}: not inside a git repository (git rev-parse: {}). marathon init takes the committed "
        "files: run `git init && git add -A && git commit -m start` there first",
        where, inside.why));
  }
  ToolRun head = host_tool({"git", "-C", r, "rev-parse", "--verify", "-q", "HEAD^{commit}"}, 60);
  if (!head.ok) {
    throw InitError(where + ": the repository has no commit yet; commit the files the task needs");
  }
  s.commit = trim(head.out);

  fs::create_directories(dest, ec);
  if (ec) throw InitError(fmt::format("cannot create {}: {}", dest.string(), ec.message()));
  fs::path tar = dest.parent_path() / (dest.filename().string() + ".tar");
  // From inside a subfolder, `git archive HEAD` holds that subtree, relative to it.
  ToolRun archive =
      host_tool({"git", "-C", r, "archive", "--format=tar", "-o", tar.string(), "HEAD"});
  if (!archive.ok) throw InitError(fmt::format("{}: git archive failed: {}", where, archive.why));
  ToolRun untar =
      host_tool({"tar", "-x", "--no-same-owner", "-f", tar.string(), "-C", dest.string()});
  fs::remove(tar, ec);
  if (!untar.ok)
    throw InitError(fmt::format("{}: unpacking the snapshot failed: {}", where, untar.why));

  for (auto it = fs::recursive_directory_iterator(dest, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    fs::file_status es = it->symlink_status(ec);
    std::string rel = fs::relative(it->path(), dest).generic_string();
    if (fs::is_directory(es)) continue;
    if (fs::is_regular_file(es)) {
      s.files.push_back(rel);
      s.bytes += fs::file_size(it->path(), ec);
    } else {
      s.skipped.push_back(rel);
    }
  }
  if (ec) throw InitError(fmt::format("cannot list {}: {}", dest.string(), ec.message()));
  std::sort(s.files.begin(), s.files.end());
  std::sort(s.skipped.begin(), s.skipped.end());
  if (s.files.empty()) {
    throw InitError(
        fmt::format("{}: no file is committed there (HEAD {})", where, s.commit.substr(0, 12)));
  }
  if (s.files.size() > kMaxSnapshotFiles || s.bytes > kMaxSnapshotBytes) {
    throw InitError(fmt::format(
        "{}: {} committed files, {:.1f} MiB: a task holds at most {} files and {} MiB (every "
        "evaluation copies them, and a run stores them in its log); point --repo at the "
        "subfolder the task needs",
        where, s.files.size(), s.bytes / 1048576.0, kMaxSnapshotFiles, kMaxSnapshotBytes >> 20));
  }
  return s;
}

std::vector<std::string> uncommitted_changes(const fs::path& repo) {
  std::error_code ec;
  if (!fs::is_directory(repo, ec)) return {};
  ToolRun status = host_tool({"git", "-C", repo.string(), "status", "--porcelain", "--", "."}, 120);
  return status.ok ? lines(status.out) : std::vector<std::string>{};
}

}  // namespace marathon::taskgen
