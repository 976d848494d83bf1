"""The generic evaluator of a repository task (docs/tasks.md, "A task from your own repository").

A repository task is a snapshot of a repository (the task's starter folder, committed files only)
plus shell commands: a metric command whose last line of output is the number to optimise, an
optional check command that must pass, an optional guard command that prints rule violations.
This program runs inside the evaluator's sandbox (docs/evaluation.md) and never writes anywhere
but its scratch folder:

1. It rebuilds the tree to judge in scratch: the clean snapshot, with the candidate's editable
   files (the task's `files.editable` globs) copied over it; an editable snapshot file missing
   from the candidate is deleted. Nothing else of the candidate folder is read: a changed
   non-editable file cannot change the verdict, so the verdict is a function of the candidate
   hash that the result cache keys on.
2. An editable file matching `[rules].protected` that differs from the snapshot (changed, added or
   deleted) is a violation; nothing is run.
3. The guard command (optional) runs; each line it prints is a violation.
4. The check command (optional) runs; a non-zero exit makes the candidate incorrect.
5. The metric command runs `[rules].runs` times; the score is the median, the spread is reported.

Before each command the tree is put back to what step 1 built (files the previous command, which
ran the candidate's code, changed or deleted are rewritten; files it added are left), so a
candidate cannot rewrite a measuring script or the sources between the check and the metric.
Every process a command starts dies with its step: this program is a child subreaper, so a
process that left the command's session (setsid) or double-forked is still found below it, and
after each command every process below it is killed before the next step starts (a daemon the
check started cannot stop the metric's tool and change the files it reads). It is also
non-dumpable: the candidate's processes (same uid) cannot open its /proc/PID/fd or mem.

The commands run with `/bin/sh -c`, in the tree, with MARATHON_REPO_DIR (the clean snapshot),
MARATHON_WORK_DIR (the tree) and the evaluator's own environment (MARATHON_TASK_DIR,
MARATHON_EVAL_SEED when fixed, ...). Verdicts are results with exit status 0; only a failure of
this program itself (an unreadable task.toml) exits non-zero.

Standalone on purpose (the standard library only): `marathon init` copies this file into the
task folders it writes, so a task keeps working when marathon moves.
"""

import ctypes
import json
import math
import os
import re
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
        Files nobody expects (build outputs) are left where they are."""
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
    kill_descendants()  # the command itself on a timeout, and whatever it left running
    for r in readers:
        r.join()  # every writer is dead: both pipes are at their end
    proc.stdout.close()
    proc.stderr.close()
    decode = lambda b: b"".join(b).decode("utf-8", errors="replace")  # noqa: E731
    return code, decode(chunks["out"]), decode(chunks["err"]), time.monotonic() - t0


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


def evaluate(task_dir, candidate_dir, spec, scratch):
    rules = spec.get("rules", {})
    files = spec.get("files", {})
    repo_dir = (task_dir / files.get("starter_dir", "starter")).resolve()
    editable = Globs(files.get("editable", []))
    protected = Globs(rules.get("protected", []))
    metric_cmd = rules.get("metric", "")
    check_cmd = rules.get("check", "")
    guard_cmd = rules.get("guard", "")
    runs = int(rules.get("runs", 1))
    timeout_s = float(spec.get("evaluator", {}).get("timeout_s", 600))
    if not metric_cmd or runs < 1:
        raise ValueError("task.toml [rules]: metric (a command) and runs >= 1 are required")
    deadline = Deadline(timeout_s * SLACK - 1)

    tree = Tree(repo_dir, candidate_dir, editable)
    if tree.refused:
        return result(False, log="the candidate cannot be judged: " + "; ".join(tree.refused))
    notes = []
    if tree.ignored:
        shown = ", ".join(sorted(tree.ignored)[:8]) + (", ..." if len(tree.ignored) > 8 else "")
        notes.append(f"not editable, so the repository's copy was used: {shown}")
    violations = [
        f"{p}: a protected file was {kind} (it must stay as committed)"
        for p, kind in sorted(tree.changes.items())
        if protected.match(p)
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
    tree.sync(work)
    env = dict(os.environ)
    env["MARATHON_REPO_DIR"] = str(repo_dir)
    env["MARATHON_WORK_DIR"] = str(work)
    metrics = {}

    if guard_cmd:
        code, out, err, secs = run_command(guard_cmd, work, env, deadline)
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
        tree.sync(work)
        code, out, err, secs = run_command(check_cmd, work, env, deadline)
        metrics["check_s"] = round(secs, 3)
        if code != 0:
            return failed("check", check_cmd, code, out, err, secs, metrics=metrics)

    values, details = [], []
    for i in range(runs):
        tree.sync(work)
        code, out, err, secs = run_command(metric_cmd, work, env, deadline)
        if code != 0:
            return failed("metric", metric_cmd, code, out, err, secs, metrics=metrics)
        value, why = last_number(out)
        if value is None:
            return result(
                False,
                metrics=metrics,
                log=f"metric `{metric_cmd}` gave no number: {why}\n{tail(err)}".rstrip(),
                failed_stage="metric",
            )
        values.append(value)
        details.append({"run": i + 1, "value": value, "seconds": round(secs, 3)})

    median = statistics.median(values)
    lo, hi = min(values), max(values)
    spread = (hi - lo) / abs(median) * 100 if median else (0.0 if hi == lo else math.inf)
    metrics.update({"min": lo, "max": hi, "runs": runs})
    if math.isfinite(spread):
        metrics["spread_pct"] = round(spread, 3)
    metrics["metric_s"] = round(sum(d["seconds"] for d in details) / runs, 3)
    log = f"metric `{metric_cmd}`: {median:.6g}"
    if runs > 1:
        log += f" (median of {runs} runs; min {lo:.6g}, max {hi:.6g})"
    if check_cmd:
        log += f"; check `{check_cmd}` passed"
    extra = {}
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
