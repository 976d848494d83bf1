"""The generic evaluator of a repository task (docs/tasks.md, "A task from your own repository").

A repository task is a snapshot of a repository (the task's starter folder, committed files only)
plus shell commands: a metric command (the number on the last line of its output, or the seconds
it takes, timed here), an optional check command that must pass, an optional guard command that
prints rule violations, an optional integrity command that must pass after the check.
This program runs inside the evaluator's sandbox (docs/evaluation.md) and never writes anywhere
but its scratch folder (and, before each command, removes runner-steering files that an earlier
command created in the folders above the tree):

1. It rebuilds the tree to judge in scratch: the clean snapshot, with the candidate's editable
   files (the task's `files.editable` globs) copied over it; an editable snapshot file missing
   from the candidate is deleted. Nothing else of the candidate folder is read: a changed
   non-editable file cannot change the verdict, so the verdict is a function of the candidate
   hash that the result cache keys on.
2. An editable file matching `[rules].protected` that differs from the snapshot (changed, added or
   deleted) is a violation; so is any change, addition or deletion of a file that steers a test
   runner or an interpreter (STEERING: conftest.py, pytest.ini, sitecustomize.py, *.pth, ...),
   wherever it is, and a new top-level module named like a standard library one; nothing is run.
3. The guard command (optional) runs; each line it prints is a violation.
4. The check command (optional) runs; a non-zero exit makes the candidate incorrect. With
   `[rules].canary` (a test folder), it runs again with a failing test added there and must fail:
   a candidate whose code makes the test runner report failures as passes is a violation.
5. The integrity command (optional, `marathon init --guard`) runs; non-zero: incorrect.
6. The metric command runs `[rules].runs` times; the score is the median, the spread is reported.
   With `[rules].metric_kind = "wall_time"` the number is the seconds the command took, timed by
   this program (a clock the candidate's processes cannot patch), and with
   `[rules].metric_output` its output must hash as the starter's did.

Before each command the tree is put back to what step 1 built (files the previous command, which
ran the candidate's code, changed or deleted are rewritten; files it added are left, except
steering files, bytecode and test-runner caches, which are removed), so a candidate cannot
rewrite a measuring script or the sources between the check and the metric, nor plant a
conftest.py or a .pyc for the next command. Every process a command starts dies with its step:
this program is a child subreaper, so a process that left the command's session (setsid) or
double-forked is still found below it, and after each command every process below it is killed
before the next step starts (a daemon the check started cannot stop the metric's tool and change
the files it reads). It is also non-dumpable: the candidate's processes (same uid) cannot open
its /proc/PID/fd or mem.

The commands run with `/bin/sh -c`, in the tree, with MARATHON_REPO_DIR (the clean snapshot),
MARATHON_WORK_DIR (the tree) and the evaluator's own environment (MARATHON_TASK_DIR,
MARATHON_EVAL_SEED when fixed, ...), less PYTHONSTARTUP and PYTHONINSPECT, plus
PYTHONNOUSERSITE=1, PYTHONDONTWRITEBYTECODE=1, a fresh PYTHONPYCACHEPREFIX and a fresh HOME for
each command (nothing one command's Python writes is read by the next one's). Verdicts are
results with exit status 0; only a failure of this program itself (an unreadable task.toml)
exits non-zero.

Standalone on purpose (the standard library only): `marathon init` copies this file into the
task folders it writes, so a task keeps working when marathon moves.
"""

import ctypes
import fnmatch
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11 with the backport installed
    import tomli as tomllib

SCHEMA_VERSION = 1
TAIL_CHARS = 1500  # of a failed command's output, for the model
SLACK = 0.92  # share of the evaluator's timeout_s the commands may use, the rest for reporting
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36

# Files that steer a test runner, a build tool or an interpreter rather than hold the code being
# improved, matched on a path's last component(s) at any depth (fnmatch, case-sensitive). A
# candidate can never add, change or delete one (the committed copies are used as they are), and
# one that a command created is removed before the next command runs. docs/tasks.md lists them.
STEERING = (
    # Python: pytest's configuration and plugins, start-up hooks, bytecode, caches
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "noxfile.py",
    "sitecustomize.py",
    "usercustomize.py",
    "*.pth",
    "*.pyc",
    "*.pyo",
    "__pycache__",
    ".pytest_cache",
    # JavaScript: npm/yarn settings, test-runner and transpiler configuration
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    "jest.config.*",
    "vitest.config.*",
    ".mocharc.*",
    "babel.config.*",
    ".babelrc",
    # Go: a test file can hold a TestMain that decides the exit status of `go test`
    "*_test.go",
    # Rust: cargo's configuration (rustflags, a runner wrapping every test binary)
    ".cargo/config",
    ".cargo/config.toml",
    # make reads GNUmakefile, then makefile, before Makefile: a new one replaces the committed one
    "GNUmakefile",
    "makefile",
)
STEERING_DIRS = ("__pycache__", ".pytest_cache")  # removed whole when a command left them


def steering(path):
    """The STEERING pattern that `path` (relative, '/'-separated) is or lies under, or None."""
    parts = path.split("/")
    for i, part in enumerate(parts):
        if part in STEERING_DIRS and i < len(parts) - 1:
            return part
    for pattern in STEERING:
        n = pattern.count("/") + 1
        tail_ = "/".join(parts[-n:])
        if len(parts) >= n and fnmatch.fnmatchcase(tail_, pattern):
            return pattern
    return None


def shadowing_module(path, tree_files):
    """The standard library module that an added file `path` would shadow, else None: a module
    `name.py` or a package `name/__init__.py` in a folder that is not itself a package (such a
    folder is the sys.path entry of a script in it, searched before the standard library)."""
    parts = path.split("/")
    if parts[-1] == "__init__.py" and len(parts) >= 2:
        folder, stem = parts[:-2], parts[-2]
    elif parts[-1].endswith(".py"):
        folder, stem = parts[:-1], parts[-1][:-3]
    else:
        return None
    if "/".join(folder + ["__init__.py"]) in tree_files:
        return None
    return stem if stem in getattr(sys, "stdlib_module_names", ()) else None


# What a task's own code (the library and tests a guard inspects) must not touch: the ways out of
# its module into the test runner's process (frames, sys.modules, builtins, the runner's modules).
TAMPER_NAMES = {"__import__", "__builtins__", "exec", "eval", "compile", "open", "globals", "breakpoint"}
TAMPER_NAMES |= {"setattr", "delattr", "vars", "__loader__", "__spec__"}
TAMPER_ATTRS = {"f_back", "f_locals", "f_globals", "f_builtins", "f_code", "gi_frame", "cr_frame"}
TAMPER_ATTRS |= {"ag_frame", "tb_frame", "tb_next", "_getframe", "modules", "sys", "os", "_os", "_sys"}
TAMPER_ATTRS |= {"__globals__", "__builtins__", "__subclasses__", "__code__", "__closure__", "__dict__"}
TAMPER_ATTRS |= {"__base__", "__bases__", "__mro__", "__loader__", "__spec__", "__import__"}
TAMPER_ATTRS |= {"settrace", "setprofile", "excepthook", "displayhook", "_exit"}


def python_tampering(source, allowed_modules=None, own_packages=(), denied_modules=()):
    """Why a Python source may reach into the process that runs it (a test runner, a benchmark),
    as lines: an import outside `allowed_modules` and `own_packages` (top-level names; None: any
    module but `denied_modules`), a name or
    attribute that leads to frames, sys.modules, builtins or other modules' globals, or an
    assignment to an attribute of an imported module that is not one of `own_packages` (a patched
    clock, a patched assertion). [] when none; a source that does not parse is a line too. For a
    task's guard (tasks/flaky-tests, tasks/api-migration): a heuristic that raises the bar, not a
    proof; the measurement itself should not run in the candidate's process where it can."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as e:
        return [f"does not parse: {e}"]

    def refused(root):
        if allowed_modules is None:
            return root in denied_modules
        return root not in set(allowed_modules) | set(own_packages)

    foreign = {}  # local name -> module it is bound to (not one of own_packages)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                root = a.name.split(".")[0]
                if refused(root):
                    out.append(f"imports {a.name}")
                if root not in own_packages:
                    foreign[a.asname or root] = a.name
        elif isinstance(node, ast.ImportFrom):
            root = (node.module or "").split(".")[0]
            if node.level == 0 and refused(root):
                out.append(f"imports from {node.module}")
            if node.level == 0 and root not in own_packages:
                for a in node.names:
                    foreign[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Name) and node.id in TAMPER_NAMES:
            out.append(f"uses {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in TAMPER_ATTRS:
            out.append(f"reaches .{node.attr}")
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        for t in targets:
            root = t
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if t is not root and isinstance(root, ast.Name) and root.id in foreign:
                out.append(f"patches {ast.unparse(t)} (of {foreign[root.id]})")
    return sorted(set(out))


def result(correct, score=None, metrics=None, details=None, violations=None, log="", **extra):
    out = {
        "schema_version": SCHEMA_VERSION,
        "correct": correct,
        "score": score,
        "metrics": metrics or {},
        "details": details if details is not None else [],
        "violations": violations or [],
        "log": log,
    }
    out.update(extra)
    return out


def glob_regex(pattern):
    """A glob as fnmatch(3) with FNM_PATHNAME reads it: `*`, `?` and `[...]` never match `/`."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i < n:
            out.append(re.escape(pattern[i]))
            i += 1
        elif c == "[":
            j = i
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:  # no closing bracket: a literal "["
                out.append(re.escape(c))
                continue
            body = pattern[i:j]
            i = j + 1
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
            out.append(f"[^/{body}]" if negate else f"(?!/)[{body}]")
        else:
            out.append(re.escape(c))
    return re.compile("".join(out) + r"\Z", re.S)


class Globs:
    def __init__(self, patterns):
        self.patterns = list(patterns)
        self.regexes = [glob_regex(p) for p in self.patterns]

    def match(self, path):
        return any(r.match(path) for r in self.regexes)


def walk(root):
    """Relative path -> kind ("file", "link", "special") of every non-folder entry under root,
    found without following any link."""
    found = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, rel) if rel else root))
        except OSError:
            continue
        for e in entries:
            path = f"{rel}/{e.name}" if rel else e.name
            st = e.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                stack.append(path)
            elif stat.S_ISLNK(st.st_mode):
                found[path] = "link"
            elif stat.S_ISREG(st.st_mode):
                found[path] = "file"
            else:
                found[path] = "special"
    return found


def same_bytes(a, b):
    try:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


class Tree:
    """The tree to judge: what each path should hold (a source file or a snapshot link)."""

    def __init__(self, repo_dir, candidate_dir, editable):
        self.repo = Path(repo_dir)
        self.candidate = Path(candidate_dir)
        repo_entries = walk(self.repo)
        cand_entries = walk(self.candidate)
        self.refused = [
            f"{p} is a {'symbolic link' if k == 'link' else 'special file'}"
            for p, k in sorted(cand_entries.items())
            if k != "file" and editable.match(p)
        ]
        self.sources = {}  # rel -> Path of the bytes it must hold
        self.links = {}  # rel -> link target (snapshot links, kept as links)
        self.changes = {}  # rel -> "changed" | "added" | "deleted" (editable paths only)
        self.ignored = []  # non-editable snapshot files the candidate holds with other bytes
        for p, k in repo_entries.items():
            if editable.match(p):
                continue
            if k == "link":
                self.links[p] = os.readlink(self.repo / p)
            elif k == "file":
                self.sources[p] = self.repo / p
                if cand_entries.get(p) == "file" and not same_bytes(self.repo / p, self.candidate / p):
                    self.ignored.append(p)
        for p, k in cand_entries.items():
            if k == "file" and editable.match(p):
                self.sources[p] = self.candidate / p
                if repo_entries.get(p) != "file":
                    self.changes[p] = "added"
                elif not same_bytes(self.repo / p, self.candidate / p):
                    self.changes[p] = "changed"
        for p in repo_entries:
            if editable.match(p) and p not in cand_entries:
                self.changes[p] = "deleted"

    def sync(self, work):
        """Makes `work` hold what it must: each expected file and link put back where it differs.
        Files nobody expects (build outputs) are left where they are, except steering files."""
        work = Path(work)
        for rel, src in self.sources.items():
            dst = work / rel
            if dst.is_symlink() or not dst.is_file() or not same_bytes(src, dst):
                remove(dst)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
                mode = stat.S_IMODE(os.stat(src).st_mode) | stat.S_IWUSR | stat.S_IRUSR
                os.chmod(dst, mode)
        for rel, target in self.links.items():
            dst = work / rel
            if not dst.is_symlink() or os.readlink(dst) != target:
                remove(dst)
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(target, dst)
        expected = set(self.sources) | set(self.links)
        for rel in sorted(walk(work)):
            if rel not in expected and steering(rel):
                remove(work / rel)  # planted by an earlier command: a conftest.py, a .pyc, ...

    def steering_changes(self):
        """Violations: the steering files a candidate added, changed or deleted, and the added
        modules that shadow the standard library."""
        out = []
        for p, kind in sorted(self.changes.items()):
            pattern = steering(p)
            if pattern:
                what = p if pattern == p.rsplit("/", 1)[-1] else f"{p} ({pattern})"
                out.append(
                    f"{what}: a file that steers test runners or interpreters was {kind} "
                    "(only the committed copy is used; no candidate may add or change one)"
                )
            elif kind == "added":
                module = shadowing_module(p, self.sources)
                if module:
                    out.append(f"{p}: an added module that shadows the standard library's `{module}`")
        return out


class Above:
    """The folders above the tree (scratch, HOME, ... up to /): pytest, tox and others look there
    for configuration when the tree has none. Steering files a command created in one of them
    are removed before the next command; what was there when this program started is kept."""

    def __init__(self, work):
        self.folders = [p for p in Path(work).resolve().parents]
        self.before = {d: set(self.names(d)) for d in self.folders}

    LOCAL = ("*.pyc", "*.pyo", "*.pth", "__pycache__", ".pytest_cache", "*_test.go")  # not looked up

    @classmethod
    def names(cls, folder):
        try:
            found = os.listdir(folder)
        except OSError:
            return []
        return [
            n for n in found if (steering(n) or n == ".cargo") and not any(fnmatch.fnmatchcase(n, p) for p in cls.LOCAL)
        ]

    def clean(self):
        for d in self.folders:
            for n in self.names(d):
                if n not in self.before[d]:
                    try:
                        remove(d / n)
                    except OSError:
                        pass


def remove(path):
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def tail(text, n=TAIL_CHARS):
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return max(0.0, self.end - time.monotonic())


def prctl(option, value):
    """prctl(2) through libc; False where it is not available (not Linux)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants():
    """{pid: state} of every process below this one (found through /proc's parent links)."""
    me = os.getpid()
    parent, state = {}, {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()  # the name before may hold anything
        parent[int(name)] = int(fields[1])
        state[int(name)] = fields[0].decode()
    found, frontier = {}, {me}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier and p not in found}
        found.update({p: state[p] for p in frontier})
    return found


def kill_descendants(limit_s=10.0):
    """SIGKILLs every process below this one until none is left alive, and reaps them. As a
    child subreaper this process inherits every orphan below it, so what left its session or
    double-forked is found too. Call it only once the child whose status matters was waited for
    (it reaps whatever it finds)."""
    end = time.monotonic() + limit_s
    while True:
        alive = [p for p, st in descendants().items() if st != "Z"]
        for p in alive:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not alive:
            return
        if time.monotonic() > end:
            raise RuntimeError(f"processes {alive} survived SIGKILL for {limit_s} s")
        time.sleep(0.002)


def run_command(command, cwd, env, deadline):
    """(exit status or None on timeout, stdout, stderr, seconds). When the command ends (or at the
    deadline) every process below this one is killed, whatever session or group it moved to;
    its output is what was written until then."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    chunks = {"out": [], "err": []}

    def drain(stream, into):
        for block in iter(lambda: stream.read1(65536), b""):
            into.append(block)

    readers = [
        threading.Thread(target=drain, args=(proc.stdout, chunks["out"]), daemon=True),
        threading.Thread(target=drain, args=(proc.stderr, chunks["err"]), daemon=True),
    ]
    for r in readers:
        r.start()
    try:
        code = proc.wait(timeout=max(deadline.left(), 0.1))
    except subprocess.TimeoutExpired:
        code = None
    seconds = time.monotonic() - t0  # the command's own time: from its start to its exit
    kill_descendants()  # the command itself on a timeout, and whatever it left running
    for r in readers:
        r.join()  # every writer is dead: both pipes are at their end
    proc.stdout.close()
    proc.stderr.close()
    decode = lambda b: b"".join(b).decode("utf-8", errors="replace")  # noqa: E731
    return code, decode(chunks["out"]), decode(chunks["err"]), seconds


def last_number(stdout):
    """The number on the last non-empty line of stdout, or (None, why)."""
    lines = [ln.strip() for ln in stdout.splitlines() if ln.strip()]
    if not lines:
        return None, "it printed nothing on stdout"
    last = lines[-1]
    try:
        value = float(last)
    except ValueError:
        shown = last if len(last) <= 200 else last[:200] + "..."
        return None, f"its last line is not a number: {json.dumps(shown)}"
    if not math.isfinite(value):
        return None, f"its last line is not a finite number: {last}"
    return value, ""


def failed(stage, command, code, out, err, seconds, **extra):
    if code is None:
        why = f"did not finish in the time left ({seconds:.1f} s); its processes were killed"
    else:
        why = f"exited with status {code} after {seconds:.1f} s"
    text = tail((out + "\n" + err).strip())
    return result(
        False,
        log=f"{stage} `{command}` {why}" + (f"\n{text}" if text else ""),
        failed_stage=stage,
        **extra,
    )


CANARY_TEXT = """import unittest


class Test{name}(unittest.TestCase):
    def test_{name}(self):
        self.fail("this test must fail: the evaluator checks that failures are reported")
"""

UNSET = ("PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONUSERBASE")


def output_hash(stdout):
    """sha256 of a command's stdout, each line stripped of trailing blanks, blank lines dropped."""
    lines = [ln.rstrip() for ln in stdout.splitlines() if ln.strip()]
    return "sha256:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()


class Commands:
    """Runs the task's commands one at a time in the tree, each after the tree is put back and the
    folders above it are cleaned, with a fresh HOME and Python bytecode cache of its own."""

    def __init__(self, tree, work, scratch, env, deadline):
        self.tree, self.work, self.scratch, self.deadline = tree, work, scratch, deadline
        self.above = Above(work)
        self.env = {k: v for k, v in env.items() if k not in UNSET}
        self.env.update(PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1")

    def run(self, command, before=None):
        self.tree.sync(self.work)
        self.above.clean()
        if before:
            before()
        home, cache = self.scratch / "home", self.scratch / "pycache"
        for d in (home, cache):
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
        env = dict(self.env, HOME=str(home), PYTHONPYCACHEPREFIX=str(cache))
        try:
            return run_command(command, self.work, env, self.deadline)
        finally:
            for d in (home, cache):
                shutil.rmtree(d, ignore_errors=True)


def evaluate(task_dir, candidate_dir, spec, scratch):
    rules = spec.get("rules", {})
    files = spec.get("files", {})
    repo_dir = (task_dir / files.get("starter_dir", "starter")).resolve()
    editable = Globs(files.get("editable", []))
    protected = Globs(rules.get("protected", []))
    metric_cmd = rules.get("metric", "")
    metric_kind = rules.get("metric_kind", "stdout")
    expected_output = rules.get("metric_output", "")
    check_cmd = rules.get("check", "")
    guard_cmd = rules.get("guard", "")
    integrity_cmd = rules.get("integrity", "")
    canary = str(rules.get("canary", "")).strip("/")
    runs = int(rules.get("runs", 1))
    timeout_s = float(spec.get("evaluator", {}).get("timeout_s", 600))
    if not metric_cmd or runs < 1:
        raise ValueError("task.toml [rules]: metric (a command) and runs >= 1 are required")
    if metric_kind not in ("stdout", "wall_time"):
        raise ValueError(f'task.toml [rules].metric_kind: "stdout" or "wall_time", not {metric_kind!r}')
    deadline = Deadline(timeout_s * SLACK - 1)

    tree = Tree(repo_dir, candidate_dir, editable)
    if tree.refused:
        return result(False, log="the candidate cannot be judged: " + "; ".join(tree.refused))
    notes = []
    if tree.ignored:
        shown = ", ".join(sorted(tree.ignored)[:8]) + (", ..." if len(tree.ignored) > 8 else "")
        notes.append(f"not editable, so the repository's copy was used: {shown}")
    violations = tree.steering_changes() + [
        f"{p}: a protected file was {kind} (it must stay as committed)"
        for p, kind in sorted(tree.changes.items())
        if protected.match(p) and not steering(p)
    ]
    if violations:
        return result(
            False,
            violations=violations,
            log="not run: protected files changed\n" + "\n".join(violations[:10] + notes),
            failed_stage="protected",
        )

    work = scratch / "work"
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["MARATHON_REPO_DIR"] = str(repo_dir)
    env["MARATHON_WORK_DIR"] = str(work)
    commands = Commands(tree, work, scratch, env, deadline)
    metrics = {}

    if guard_cmd:
        code, out, err, secs = commands.run(guard_cmd)
        if code != 0:  # the guard itself failed: the task is broken, not the candidate
            raise RuntimeError(f"the guard `{guard_cmd}` failed (exit {code}): {tail(out + err)}")
        found = [ln.strip() for ln in out.splitlines() if ln.strip()]
        if found:
            return result(
                False,
                violations=found,
                log="not run: the task's rules are broken\n" + "\n".join(found[:10] + notes),
                failed_stage="guard",
            )

    if check_cmd:
        code, out, err, secs = commands.run(check_cmd)
        metrics["check_s"] = round(secs, 3)
        if code != 0:
            return failed("check", check_cmd, code, out, err, secs, metrics=metrics)
        if canary:
            name = "T" + secrets.token_hex(6)
            planted = work / canary / f"test_{name.lower()}.py"

            def plant():
                planted.parent.mkdir(parents=True, exist_ok=True)
                planted.write_text(CANARY_TEXT.format(name=name))

            code, out, err, secs = commands.run(check_cmd, before=plant)
            remove(planted)
            if code == 0:
                why = (
                    f"the check `{check_cmd}` passed with a failing test added to {canary}/: the "
                    "candidate changes how the test runner reports failures"
                )
                return result(
                    False,
                    violations=[why],
                    metrics=metrics,
                    log=f"{why}\n{tail(out + err)}".rstrip(),
                    failed_stage="canary",
                )

    if integrity_cmd:
        code, out, err, secs = commands.run(integrity_cmd)
        if code != 0:
            return failed("integrity", integrity_cmd, code, out, err, secs, metrics=metrics)

    values, details = [], []
    for i in range(runs):
        code, out, err, secs = commands.run(metric_cmd)
        if code != 0:
            return failed("metric", metric_cmd, code, out, err, secs, metrics=metrics)
        digest = output_hash(out)
        if metric_kind == "wall_time":
            if expected_output and digest != expected_output:
                return result(
                    False,
                    metrics=metrics,
                    log=f"metric `{metric_cmd}`: its output is not the starter's (the work it "
                    f"does must give the same result)\n{tail(out)}".rstrip(),
                    failed_stage="metric",
                )
            value = secs
        else:
            value, why = last_number(out)
            if value is None:
                return result(
                    False,
                    metrics=metrics,
                    log=f"metric `{metric_cmd}` gave no number: {why}\n{tail(err)}".rstrip(),
                    failed_stage="metric",
                )
        values.append(value)
        details.append({"run": i + 1, "value": value, "seconds": round(secs, 3), "output": digest})

    median = statistics.median(values)
    lo, hi = min(values), max(values)
    spread = (hi - lo) / abs(median) * 100 if median else (0.0 if hi == lo else math.inf)
    metrics.update({"min": lo, "max": hi, "runs": runs})
    if math.isfinite(spread):
        metrics["spread_pct"] = round(spread, 3)
    metrics["metric_s"] = round(sum(d["seconds"] for d in details) / runs, 3)
    outputs = {d["output"] for d in details}
    what = "seconds, timed by the evaluator" if metric_kind == "wall_time" else "its last line"
    log = f"metric `{metric_cmd}`: {median:.6g} ({what})"
    if runs > 1:
        log += f" (median of {runs} runs; min {lo:.6g}, max {hi:.6g})"
    if check_cmd:
        log += f"; check `{check_cmd}` passed"
    if integrity_cmd:
        log += f"; integrity `{integrity_cmd}` passed"
    extra = {"metric_output": outputs.pop() if len(outputs) == 1 else None}
    baseline = rules.get("baseline")
    if isinstance(baseline, (int, float)) and not isinstance(baseline, bool):
        extra["baseline_score"] = baseline
    return result(
        True,
        score=median,
        metrics=metrics,
        details=details,
        log="\n".join([log] + notes),
        **extra,
    )


def main():
    # Before any command runs: orphans below this process are reparented to it (kill_descendants
    # finds them), and its /proc/PID/fd and mem are closed to the commands' processes.
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_DUMPABLE, 0)
    task_dir = Path(os.environ.get("MARATHON_TASK_DIR") or os.getcwd()).resolve()
    with open(task_dir / "task.toml", "rb") as f:
        spec = tomllib.load(f)
    starter = task_dir / spec.get("files", {}).get("starter_dir", "starter")
    candidate_dir = Path(os.environ.get("MARATHON_CANDIDATE_DIR") or starter).resolve()
    scratch = Path(tempfile.mkdtemp(prefix="repo-eval-", dir=os.environ.get("HOME")))
    try:
        out = evaluate(task_dir, candidate_dir, spec, scratch)
    finally:
        kill_descendants()
        shutil.rmtree(scratch, ignore_errors=True)
    out["python"] = sys.executable
    # The newline first ends any line a candidate process wrote to the same stream (through the
    # sandbox's PID 1, which holds it) before it was killed: the result is a line of its own, and
    # the last.
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
