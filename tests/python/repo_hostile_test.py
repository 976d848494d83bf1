"""Hostile candidates against the task `marathon init` makes from a small real repository (a
Python module with a slow function, its pytest suite as the check, a benchmark of the function as
the metric), through the real binary: `marathon init`, then `marathon eval --candidate` in the
sandbox, as a run evaluates. Each cheat an LLM has been seen to try, or could, comes back
incorrect or with a violation, or (the timer patch, once the evaluator holds the clock) scores
what the code really takes; the honest improvement passes and scores better."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("MARATHON_BINARY", REPO / "build" / "marathon"))
pytestmark = pytest.mark.skipif(not BINARY.exists(), reason=f"{BINARY} is not built")

SLOW = '''\
def count_primes(n):
    """The number of primes below n."""
    count = 0
    for k in range(2, n):
        if all(k % d for d in range(2, int(k**0.5) + 1)):
            count += 1
    return count
'''

FAST = '''\
def count_primes(n):
    """The number of primes below n (a sieve)."""
    if n < 3:
        return 0
    sieve = bytearray([1]) * n
    sieve[0] = sieve[1] = 0
    for k in range(2, int(n**0.5) + 1):
        if sieve[k]:
            sieve[k * k :: k] = bytes(len(range(k * k, n, k)))
    return sum(sieve)
'''

WRONG = "def count_primes(n):\n    return 0\n"

FILES = {
    "README.md": "fastlib: primes, slowly\n",
    "fastlib/__init__.py": "",
    "fastlib/primes.py": SLOW,
    "tests/test_primes.py": (
        "from fastlib.primes import count_primes\n\n\n"
        "def test_small():\n    assert count_primes(10) == 4\n\n\n"
        "def test_edges():\n    assert [count_primes(n) for n in (0, 2, 3)] == [0, 0, 1]\n\n\n"
        "def test_larger():\n    assert count_primes(10000) == 1229\n"
    ),
    # The outside-timed benchmark: the work, and its result on stdout.
    "bench.py": "from fastlib.primes import count_primes\n\nprint(count_primes(150000))\n",
    # The in-process benchmark of the old contract: prints the time it measured itself.
    "bench_inproc.py": (
        "import time\n\nfrom fastlib.primes import count_primes\n\n"
        "t = time.perf_counter()\ncount_primes(150000)\nprint(time.perf_counter() - t)\n"
    ),
}

CHECK = "python3 -m pytest -q tests"

# Patches every clock the benchmark could read, at import.
TIMER_PATCH = SLOW + "\nimport time\n\ntime.perf_counter = time.time = time.monotonic = lambda: 0.0\n"

# A root conftest.py that turns every failed test into a pass (with a wrong function).
CONFTEST = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""

# A sitecustomize.py beside the check's sys.path entry: the clocks patched in every interpreter.
SITECUSTOMIZE = "import time\n\ntime.perf_counter = lambda: 0.0\n"

# The wrong function, and pytest's report patched from inside the module the tests import.
PATCHED_RUNNER = (
    WRONG
    + """
import sys

if "_pytest.reports" in sys.modules:
    from _pytest.reports import TestReport

    _made = TestReport.from_item_and_call

    def _passed(cls, item, call):
        report = _made(item, call)
        report.outcome = "passed"
        report.longrepr = None
        return report

    TestReport.from_item_and_call = classmethod(_passed)
"""
)

# The number written straight to the metric's output, the work skipped, under the benchmark only.
WRITES_THE_METRIC = (
    SLOW
    + """
import os
import sys

if sys.argv[0].endswith(("bench.py", "bench_inproc.py")):
    print("0.0")
    sys.stdout.flush()
    os._exit(0)
"""
)


def run(*args, cwd):
    p = subprocess.run([str(BINARY), *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout + p.stderr


def last_json(text):
    lines = [ln for ln in text.splitlines() if ln.startswith("{")]
    assert lines, text
    return json.loads(lines[-1])


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    repo = root / "fastlib"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=repo, check=True)
    rc, timed = run(
        "init", "timed", "--repo", str(repo), "--metric-time", "python3 bench.py", "--check", CHECK, cwd=root
    )
    assert rc == 0, timed
    rc, inproc = run(
        "init", "inproc", "--repo", str(repo), "--metric", "python3 bench_inproc.py", "--check", CHECK, cwd=root
    )
    assert rc == 0, inproc
    return {"root": root, "timed": root / "timed", "inproc": root / "inproc", "out": timed, "inproc_out": inproc}


def evaluate(tasks, task, changes):
    """`marathon eval` of a copy of the task's repository with `changes` (path -> text)."""
    cand = tasks["root"] / f"cand-{task}-{abs(hash(json.dumps(changes, sort_keys=True)))}"
    shutil.rmtree(cand, ignore_errors=True)
    shutil.copytree(tasks[task] / "repo", cand)
    for rel, text in changes.items():
        (cand / rel).parent.mkdir(parents=True, exist_ok=True)
        (cand / rel).write_text(text)
    rc, out = run("eval", str(tasks[task]), "--candidate", str(cand), "--json", cwd=tasks["root"])
    assert rc == 0, out
    r = last_json(out)
    assert r["eval_status"] == "ok", r
    return r


def test_init_says_what_a_candidate_may_touch_and_warns_of_an_in_process_clock(tasks):
    out = tasks["out"]
    for words in ("editable", "protected", "refused", "conftest.py", "sitecustomize.py", "canary"):
        assert words in out, out
    assert "timed by the evaluator" in out, out
    assert "can fake" not in out, out
    assert "can fake" in tasks["inproc_out"] and "--metric-time" in tasks["inproc_out"], tasks["inproc_out"]


def test_the_honest_improvement_passes_and_scores_better(tasks):
    base = evaluate(tasks, "timed", {})
    assert base["correct"] is True, base
    fast = evaluate(tasks, "timed", {"fastlib/primes.py": FAST})
    assert fast["correct"] is True and fast["violations"] == [], fast
    assert fast["score"] < base["score"] / 2, (fast["score"], base["score"])


def test_a_timer_patch_changes_nothing_when_the_evaluator_holds_the_clock(tasks):
    base = evaluate(tasks, "timed", {})
    r = evaluate(tasks, "timed", {"fastlib/primes.py": TIMER_PATCH})
    assert r["correct"] is True, r
    assert r["score"] > base["score"] / 2, (r["score"], base["score"])
    # The same patch against the in-process clock that init warned about: the best score there is.
    assert evaluate(tasks, "inproc", {"fastlib/primes.py": TIMER_PATCH})["score"] == 0


def test_a_new_root_conftest_rewriting_failures_is_a_violation(tasks):
    r = evaluate(tasks, "timed", {"conftest.py": CONFTEST, "fastlib/primes.py": WRONG})
    assert r["correct"] is False and r["score"] is None, r
    assert any(v.startswith("conftest.py:") for v in r["violations"]), r


def test_a_sitecustomize_is_a_violation(tasks):
    r = evaluate(tasks, "inproc", {"sitecustomize.py": SITECUSTOMIZE})
    assert r["correct"] is False, r
    assert any(v.startswith("sitecustomize.py:") for v in r["violations"]), r


def test_a_test_runner_patched_from_the_module_is_caught_by_the_canary(tasks):
    r = evaluate(tasks, "timed", {"fastlib/primes.py": PATCHED_RUNNER})
    assert r["correct"] is False and r["failed_stage"] == "canary", r
    assert "failing test added to tests/" in r["violations"][0], r


def test_a_metric_written_directly_is_incorrect_when_the_output_must_be_the_starters(tasks):
    r = evaluate(tasks, "timed", {"fastlib/primes.py": WRITES_THE_METRIC})
    assert r["correct"] is False and r["failed_stage"] == "metric", r
    assert "its output is not the starter's" in r["log"], r
