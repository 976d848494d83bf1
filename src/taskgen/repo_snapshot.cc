#include "taskgen/repo_snapshot.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "sandbox/launcher.h"
#include "taskgen/host_git.h"

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

ToolRun host_tool(const HostCommand& c, double timeout_s = 300) {
  sandbox::LaunchSpec spec;
  spec.profile = sandbox::Profile::kHostTool;
  spec.isolation = sandbox::Isolation::kNone;
  spec.argv = c.argv;
  spec.env = c.env;  // host_git.h: nothing of git's or tar's settings but marathon's
  spec.cwd = c.cwd;
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

// What the repository's own git directory is asked: where things are and the commit. Nothing
// else runs there (host_git.h).
struct RepoPlace {
  fs::path toplevel;              // the work tree
  fs::path objects;               // the object folder (the main one, for a linked work tree)
  fs::path index;                 // the index of this work tree
  std::string commit;             // HEAD, "" when there is none
  std::vector<std::string> safe;  // the operator's safe.directory values
};

// nullopt (and `why` set) when `dir` is not inside a git work tree.
std::optional<RepoPlace> locate(const fs::path& dir, std::string& why) {
  RepoPlace p;
  p.safe = operator_safe_directories();
  GitPlace at{dir, {}, {}, {}};
  ToolRun paths = host_tool(
      git_command(at,
                  {"rev-parse", "--show-toplevel", "--git-path", "objects", "--git-path", "index"},
                  p.safe),
      60);
  if (!paths.ok) {
    why = paths.why;
    return std::nullopt;
  }
  std::vector<std::string> l;
  size_t start = 0;
  while (start < paths.out.size()) {
    size_t nl = paths.out.find('\n', start);
    if (nl == std::string::npos) nl = paths.out.size();
    l.push_back(paths.out.substr(start, nl - start));
    start = nl + 1;
  }
  if (l.size() != 3 || l[0].empty() || l[1].empty() || l[2].empty()) {
    why = "git rev-parse printed paths that cannot be read: " + paths.out;
    return std::nullopt;
  }
  // --git-path prints a path relative to the folder it ran in, unless absolute.
  auto from_dir = [&](const std::string& s) {
    fs::path q(s);
    return (q.is_absolute() ? q : dir / q).lexically_normal();
  };
  p.toplevel = fs::path(l[0]).lexically_normal();
  p.objects = from_dir(l[1]);
  p.index = from_dir(l[2]);
  ToolRun head =
      host_tool(git_command(at, {"rev-parse", "--verify", "-q", "HEAD^{commit}"}, p.safe), 60);
  if (head.ok) p.commit = trim(head.out);
  return p;
}

// A git command that reads the work tree, the index and the objects through a clean git
// directory of marathon's: none of the repository's configuration, hooks or drivers apply.
HostCommand in_clean_dir(const fs::path& cwd, const RepoPlace& p, const CleanGitDir& g,
                         const std::vector<std::string>& args) {
  return git_command({cwd, g.path(), p.toplevel, p.index}, args);
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

  std::string why;
  std::optional<RepoPlace> place = locate(s.repo, why);
  if (!place) {
    throw InitError(fmt::format(
        "{}: not inside a git repository (git rev-parse: {}). marathon init takes the committed "
        "files: run `git init && git add -A && git commit -m start` there first",
        where, why));
  }
  if (place->commit.empty()) {
    throw InitError(where + ": the repository has no commit yet; commit the files the task needs");
  }
  s.commit = place->commit;
  std::optional<CleanGitDir> clean;
  try {
    clean.emplace(place->objects, s.commit);
  } catch (const std::runtime_error& e) {
    throw InitError(fmt::format("{}: {}", where, e.what()));
  }

  fs::create_directories(dest, ec);
  if (ec) throw InitError(fmt::format("cannot create {}: {}", dest.string(), ec.message()));
  fs::path tar = dest.parent_path() / (dest.filename().string() + ".tar");
  // From inside a subfolder, `git archive HEAD` holds that subtree, relative to it.
  ToolRun archive = host_tool(in_clean_dir(
      s.repo, *place, *clean, {"archive", "--format=tar", "-o", tar.string(), "HEAD"}));
  if (!archive.ok) throw InitError(fmt::format("{}: git archive failed: {}", where, archive.why));
  ToolRun untar = host_tool(tar_command(
      {"-x", "--no-same-owner", "--no-same-permissions", "-f", tar.string(), "-C", dest.string()}));
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
  std::string why;
  std::optional<RepoPlace> place = locate(fs::absolute(repo, ec).lexically_normal(), why);
  if (!place || place->commit.empty()) return {};
  try {
    CleanGitDir clean(place->objects, place->commit);
    ToolRun status = host_tool(
        in_clean_dir(
            fs::absolute(repo, ec).lexically_normal(), *place, clean,
            {"status", "--porcelain", "--ignore-submodules=all", "--no-renames", "--", "."}),
        120);
    return status.ok ? lines(status.out) : std::vector<std::string>{};
  } catch (const std::runtime_error&) {
    return {};
  }
}

}  // namespace marathon::taskgen
