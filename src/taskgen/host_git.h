// How `marathon init` runs git (and tar) on the host, on a repository it may have received whole
// (an archive, a shared folder with its .git/): nothing the repository configures runs. A
// repository's own configuration (.git/config, the files it includes, .git/hooks) can name
// programs git runs by itself: core.fsmonitor during `git status`, filter drivers' clean and
// smudge commands during `git status` and `git archive`, hooks (post-index-change when status
// refreshes the index), a pager, an editor, an askpass or ssh program. docs/security.md.
//
// Two layers:
//  - every git command is built by git_command(): no system or global configuration
//    (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null), the runner's GIT_* variables dropped,
//    and `-c` overrides for every program-naming key git reads on the way (core.fsmonitor,
//    core.hooksPath, core.pager, core.editor, core.askPass, core.sshCommand, diff.external, ...),
//    no optional locks (status writes no index, so no index hook), no network protocol;
//  - the commands that read files (archive, status) do not open the repository's git directory
//    at all: they run in a clean git directory of marathon's (CleanGitDir) that borrows the
//    repository's objects through objects/info/alternates and whose HEAD is the commit. Its
//    configuration is marathon's, so no filter driver, hook or fsmonitor of the repository's
//    exists there, whatever its name or the file that defines it.
// The repository's own directory is only asked for what rev-parse prints (paths and the commit).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sandbox/environment.h"

namespace marathon::taskgen {

// What runs: argv, the environment set inside (sandbox::LaunchSpec::env) and the working folder.
struct HostCommand {
  std::vector<std::string> argv;
  sandbox::EnvMap env;
  std::filesystem::path cwd;
};

// Where a git command looks. Empty git_dir: git finds the repository from `cwd` as usual (only
// for rev-parse and config); set: GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE name every folder
// and file git opens.
struct GitPlace {
  std::filesystem::path cwd;
  std::filesystem::path git_dir;
  std::filesystem::path work_tree;
  std::filesystem::path index_file;
};

// The runner's environment less every variable git or tar takes configuration or a program from
// (GIT_*, PAGER, EDITOR, VISUAL, SSH_ASKPASS, TAR_OPTIONS, ...), plus the fixed settings above.
sandbox::EnvMap host_tool_environment();

// The one way init builds a git command: `git --no-pager -c KEY=VALUE... ARGS` with the
// environment of host_tool_environment() and the place's variables. `safe_directories` are the
// operator's own safe.directory values (operator_safe_directories()), passed on as `-c`: git's
// ownership check of a repository another user owns stays what the operator configured.
HostCommand git_command(const GitPlace& place, const std::vector<std::string>& args,
                        const std::vector<std::string>& safe_directories = {});

// `tar ARGS` with the same environment.
HostCommand tar_command(const std::vector<std::string>& args);

// The `-c` overrides git_command() puts before every command (for tests and docs).
std::vector<std::string> neutral_git_config();

// The safe.directory values of the operator's system and global git configuration (read from
// those files alone, never from a repository's), in the order git reads them.
std::vector<std::string> operator_safe_directories();

// A git directory of marathon's in the temporary folder, removed with the object: HEAD is
// `commit`, objects/info/alternates names `objects` (the repository's object folder), the
// configuration says nothing but the format. Throws std::runtime_error when it cannot be made.
class CleanGitDir {
 public:
  CleanGitDir(const std::filesystem::path& objects, const std::string& commit);
  ~CleanGitDir();
  CleanGitDir(const CleanGitDir&) = delete;
  CleanGitDir& operator=(const CleanGitDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace marathon::taskgen
