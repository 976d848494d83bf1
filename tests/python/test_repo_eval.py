"""harness/repo_eval.py, the generic evaluator of repository tasks, run as marathon runs it (a task
folder, a candidate folder, a scratch HOME) on small tasks made here: what it takes from the
candidate, what it refuses, how it reports the metric, and that the candidate's code cannot
rewrite the measuring script between the check and the metric."""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO

from harness.repo_eval import glob_regex, last_number

EVALUATOR = REPO / "harness" / "repo_eval.py"


def make_task(root, files, rules, editable=("*",)):
    task = root / "task"
    repo = task / "repo"
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    toml = textwrap.dedent(
        f"""\
        name = "t"
        description = "d"
        [files]
        starter_dir = "repo"
        starter = {json.dumps(sorted(files))}
        editable = {json.dumps(list(editable))}
        [goal]
        metric = "m"
        direction = "min"
        [evaluator]
        command = ["{{python}}", "evaluate.py"]
        timeout_s = 60
        version = "1"
        [rules]
        """
    )
    for k, v in rules.items():
        toml += f"{k} = {json.dumps(v)}\n"
    (task / "task.toml").write_text(toml)
    return task


def candidate(root, task, changes, name="cand"):
    """A copy of the task's repository with `changes` (path -> text, or None to delete)."""
    cand = root / name
    subprocess.run(["cp", "-r", str(task / "repo"), str(cand)], check=True)
    for rel, text in changes.items():
        if text is None:
            (cand / rel).unlink()
        else:
            (cand / rel).parent.mkdir(parents=True, exist_ok=True)
            (cand / rel).write_text(text)
    return cand


def evaluate(task, cand, tmp_path):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, MARATHON_TASK_DIR=str(task), MARATHON_CANDIDATE_DIR=str(cand), HOME=str(home))
    p = subprocess.run([sys.executable, str(EVALUATOR)], cwd=task, env=env, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert list(home.iterdir()) == [], "the scratch folder is left behind"
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


VALUE_REPO = {
    "value.txt": "7\n",
    "measure.sh": "cat value.txt\n",
    "check.sh": "grep -qv bad value.txt\n",
    "notes.md": "read me\n",
}
VALUE_RULES = {"metric": "sh measure.sh", "check": "sh check.sh", "runs": 3, "protected": ["measure.sh"]}


def test_the_starter_scores_its_metric_median_with_the_spread(tmp_path):
    task = make_task(tmp_path, VALUE_REPO, VALUE_RULES)
    r = evaluate(task, task / "repo", tmp_path)
    assert r["schema_version"] == 1 and r["correct"] is True and r["score"] == 7
    assert r["metrics"]["runs"] == 3 and r["metrics"]["min"] == 7 and r["metrics"]["spread_pct"] == 0
    assert [d["value"] for d in r["details"]] == [7, 7, 7]
    assert "baseline_score" not in r


def test_a_changed_editable_file_changes_the_score(tmp_path):
    task = make_task(tmp_path, VALUE_REPO, dict(VALUE_RULES, baseline=7))
    r = evaluate(task, candidate(tmp_path, task, {"value.txt": "3\n"}), tmp_path)
    assert r["correct"] is True and r["score"] == 3 and r["baseline_score"] == 7


def test_a_changed_protected_file_is_a_violation_and_nothing_runs(tmp_path):
    task = make_task(tmp_path, VALUE_REPO, VALUE_RULES)
    r = evaluate(task, candidate(tmp_path, task, {"measure.sh": "echo 0\n"}), tmp_path)
    assert r["correct"] is False and r["score"] is None
    assert r["violations"] == ["measure.sh: a protected file was changed (it must stay as committed)"]
    r = evaluate(task, candidate(tmp_path, task, {"measure.sh": None}, "gone"), tmp_path)
    assert r["violations"] and "deleted" in r["violations"][0]


def test_a_non_editable_file_is_always_the_committed_copy(tmp_path):
    task = make_task(tmp_path, VALUE_REPO, VALUE_RULES, editable=["value.txt"])
    r = evaluate(task, candidate(tmp_path, task, {"measure.sh": "echo 0\n", "value.txt": "5\n"}), tmp_path)
    assert r["correct"] is True and r["score"] == 5 and r["violations"] == []
    assert "measure.sh" in r["log"] and "not editable" in r["log"]


def test_a_failing_check_is_incorrect_with_its_output(tmp_path):
    task = make_task(tmp_path, VALUE_REPO, VALUE_RULES)
    r = evaluate(task, candidate(tmp_path, task, {"value.txt": "bad\n"}), tmp_path)
    assert r["correct"] is False and r["failed_stage"] == "check"
    assert "sh check.sh" in r["log"] and "exited with status 1" in r["log"]


def test_a_metric_without_a_number_is_incorrect_saying_what_it_printed(tmp_path):
    task = make_task(tmp_path, VALUE_REPO, VALUE_RULES)
    r = evaluate(task, candidate(tmp_path, task, {"value.txt": "seven\n"}), tmp_path)
    assert r["correct"] is False and r["failed_stage"] == "metric"
    assert 'its last line is not a number: "seven"' in r["log"]


def test_an_editable_file_the_candidate_deleted_is_deleted(tmp_path):
    task = make_task(tmp_path, VALUE_REPO, dict(VALUE_RULES, metric="test -f notes.md && echo 1 || echo 2"))
    assert evaluate(task, task / "repo", tmp_path)["score"] == 1
    assert evaluate(task, candidate(tmp_path, task, {"notes.md": None}), tmp_path)["score"] == 2


def test_the_check_cannot_rewrite_the_measuring_script_for_the_metric(tmp_path):
    # The check runs the candidate's code; what it writes over a committed file is put back
    # before the metric runs.
    files = dict(VALUE_REPO, **{"check.sh": "sh hook.sh\n", "hook.sh": "true\n"})
    task = make_task(tmp_path, files, dict(VALUE_RULES, runs=1))
    cheat = candidate(tmp_path, task, {"hook.sh": "echo 'echo 0' > measure.sh; echo 0 > value.txt\n"})
    r = evaluate(task, cheat, tmp_path)
    assert r["correct"] is True and r["score"] == 7


def test_a_guard_line_is_a_violation(tmp_path):
    task = make_task(
        tmp_path, VALUE_REPO, dict(VALUE_RULES, guard="grep -q 0 value.txt && echo 'zero is banned' || true")
    )
    assert evaluate(task, task / "repo", tmp_path)["correct"] is True
    r = evaluate(task, candidate(tmp_path, task, {"value.txt": "0\n"}), tmp_path)
    assert r["correct"] is False and r["violations"] == ["zero is banned"]


def test_a_linked_editable_file_is_refused(tmp_path):
    task = make_task(tmp_path, VALUE_REPO, VALUE_RULES)
    cand = candidate(tmp_path, task, {"value.txt": None})
    os.symlink("/etc/hostname", cand / "value.txt")
    r = evaluate(task, cand, tmp_path)
    assert r["correct"] is False and "value.txt is a symbolic link" in r["log"]


def test_a_hanging_metric_is_killed_at_the_deadline(tmp_path):
    task = make_task(tmp_path, VALUE_REPO, dict(VALUE_RULES, metric="sleep 600 & sleep 600"))
    toml = (task / "task.toml").read_text().replace("timeout_s = 60", "timeout_s = 4")
    (task / "task.toml").write_text(toml)
    r = evaluate(task, task / "repo", tmp_path)
    assert r["correct"] is False and "did not finish" in r["log"]


@pytest.mark.parametrize(
    "pattern,path,matches",
    [
        ("*", "a.py", True),
        ("*", "src/a.py", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/sub/a.py", False),
        ("?.c", "a.c", True),
        ("?.c", "/.c", False),
        ("[ab].c", "b.c", True),
        ("[!ab].c", "c.c", True),
        ("[!ab].c", "a.c", False),
        ("a\\*.c", "a*.c", True),
        ("a\\*.c", "ab.c", False),
        ("[]x].c", "].c", True),
    ],
)
def test_globs_match_as_fnmatch_with_fnm_pathname(pattern, path, matches):
    assert bool(glob_regex(pattern).match(path)) is matches


def test_the_number_is_the_last_non_empty_line():
    assert last_number("warming up\n12.5\n\n") == (12.5, "")
    assert last_number("1e3") == (1000.0, "")
    assert last_number("")[0] is None
    assert last_number("3 ms")[0] is None
    assert last_number("nan")[0] is None


def test_a_steering_file_added_or_changed_anywhere_is_a_violation_naming_it(tmp_path):
    files = dict(VALUE_REPO, **{"conftest.py": "# committed\n", "pkg/__init__.py": ""})
    task = make_task(tmp_path, files, VALUE_RULES, editable=["*", "pkg/*"])
    assert evaluate(task, task / "repo", tmp_path)["correct"] is True, "the committed copies stay usable"
    for i, (rel, text) in enumerate(
        [
            ("conftest.py", "import os\n"),
            ("pkg/conftest.py", "import os\n"),
            ("pytest.ini", "[pytest]\n"),
            ("sitecustomize.py", "import time\n"),
            ("pkg/usercustomize.py", "\n"),
            ("evil.pth", "import os\n"),
            ("pkg/mod.pyc", "x"),
            ("pyproject.toml", "[tool.pytest.ini_options]\n"),
            ("jest.config.js", "module.exports = {}\n"),
            ("GNUmakefile", "all:\n"),
        ]
    ):
        r = evaluate(task, candidate(tmp_path, task, {rel: text}, f"c{i}"), tmp_path)
        assert r["correct"] is False and r["failed_stage"] == "protected", (rel, r)
        assert r["violations"][0].startswith(rel), (rel, r["violations"])
        assert "steers test runners or interpreters" in r["violations"][0]
    r = evaluate(task, candidate(tmp_path, task, {"conftest.py": None}, "gone"), tmp_path)
    assert "was deleted" in r["violations"][0]


def test_an_added_module_shadowing_the_standard_library_is_a_violation(tmp_path):
    files = dict(VALUE_REPO, **{"pkg/__init__.py": ""})
    task = make_task(tmp_path, files, VALUE_RULES, editable=["*", "pkg/*"])
    r = evaluate(task, candidate(tmp_path, task, {"statistics.py": "x = 1\n"}), tmp_path)
    assert r["violations"] == ["statistics.py: an added module that shadows the standard library's `statistics`"]
    r = evaluate(task, candidate(tmp_path, task, {"pkg/statistics.py": "x = 1\n"}, "inpkg"), tmp_path)
    assert r["correct"] is True, "pkg.statistics shadows nothing"


def test_steering_files_a_command_planted_are_gone_before_the_next(tmp_path):
    # The check runs the candidate's code (hook.sh), which plants a conftest.py, a .pyc, a
    # pytest.ini above the tree and a user-site .pth; the metric sees none of them.
    files = dict(VALUE_REPO, **{"check.sh": "sh hook.sh\n", "hook.sh": "true\n"})
    metric = (
        'for f in conftest.py tests/__pycache__/x.pyc ../pytest.ini ../../pytest.ini "$HOME/.local/x.pth"; do '
        'test -e "$f" && echo "planted $f" >&2 && exit 3; done; '
        'test "$PYTHONNOUSERSITE" = 1 -a -z "$PYTHONSTARTUP" -a "$PYTHONDONTWRITEBYTECODE" = 1 || exit 4; '
        "cat value.txt"
    )
    task = make_task(tmp_path, files, dict(VALUE_RULES, metric=metric, runs=1))
    hook = (
        "echo x > conftest.py; mkdir -p tests/__pycache__; echo x > tests/__pycache__/x.pyc; "
        'echo x > ../pytest.ini; echo x > ../../pytest.ini; mkdir -p "$HOME/.local"; echo x > "$HOME/.local/x.pth"\n'
    )
    r = evaluate(task, candidate(tmp_path, task, {"hook.sh": hook}), tmp_path)
    assert r["correct"] is True and r["score"] == 7, r


def test_a_wall_time_metric_is_timed_by_the_evaluator_not_read_from_the_output(tmp_path):
    files = dict(VALUE_REPO, **{"work.sh": "sleep 0.3; echo done\n"})
    rules = dict(VALUE_RULES, metric="sh work.sh", metric_kind="wall_time", runs=2, protected=[])
    task = make_task(tmp_path, files, rules)
    r = evaluate(task, task / "repo", tmp_path)
    assert r["correct"] is True and 0.3 <= r["score"] < 2.0, r
    assert r["metric_output"].startswith("sha256:") and "timed by the evaluator" in r["log"]
    fast = evaluate(task, candidate(tmp_path, task, {"work.sh": "echo done\n"}), tmp_path)
    assert fast["correct"] is True and fast["score"] < 0.2, fast


def test_a_wall_time_metric_whose_output_is_not_the_starters_is_incorrect(tmp_path):
    files = dict(VALUE_REPO, **{"work.sh": "sleep 0.2; echo 42\n"})
    rules = dict(VALUE_RULES, metric="sh work.sh", metric_kind="wall_time", protected=[])
    task = make_task(tmp_path, files, rules)
    rules["metric_output"] = evaluate(task, task / "repo", tmp_path)["metric_output"]
    task = make_task(tmp_path / "2", files, rules)
    assert evaluate(task, task / "repo", tmp_path)["correct"] is True
    r = evaluate(task, candidate(tmp_path, task, {"work.sh": "echo 0\n"}), tmp_path)
    assert r["correct"] is False and "its output is not the starter's" in r["log"], r


def test_an_integrity_command_failing_after_the_check_is_incorrect_with_its_output(tmp_path):
    rules = dict(VALUE_RULES, integrity="grep -q 3 value.txt && echo 'three is not allowed' && exit 1 || true")
    task = make_task(tmp_path, VALUE_REPO, rules)
    assert evaluate(task, task / "repo", tmp_path)["correct"] is True
    r = evaluate(task, candidate(tmp_path, task, {"value.txt": "3\n"}), tmp_path)
    assert r["correct"] is False and r["failed_stage"] == "integrity", r
    assert "three is not allowed" in r["log"]


def test_a_check_that_passes_with_the_canary_test_added_is_a_violation(tmp_path):
    # A test runner (unittest) whose result the candidate's module rewrites: every test passes.
    files = {
        "lib.py": "def f():\n    return 1\n",
        "tests/__init__.py": "",
        "tests/test_lib.py": "import unittest\nfrom lib import f\n\n\nclass T(unittest.TestCase):\n"
        "    def test_f(self):\n        self.assertEqual(f(), 1)\n",
        "bench.sh": "echo 5\n",
    }
    rules = {
        "metric": "sh bench.sh",
        "check": f"{sys.executable} -m unittest discover -s tests -t .",
        "canary": "tests",
    }
    task = make_task(tmp_path, files, rules, editable=["*"])
    assert evaluate(task, task / "repo", tmp_path)["correct"] is True
    patched = (
        "import unittest\n\nunittest.TestResult.addFailure = lambda self, test, err: None\n\n\ndef f():\n    return 2\n"
    )
    r = evaluate(task, candidate(tmp_path, task, {"lib.py": patched}), tmp_path)
    assert r["correct"] is False and r["failed_stage"] == "canary", r
    assert "failing test added to tests/" in r["violations"][0]
    assert sorted(p.name for p in (task / "repo" / "tests").iterdir()) == ["__init__.py", "test_lib.py"]


def test_the_steering_list_is_the_one_init_prints():
    # src/taskgen/task_draft.cc's steering_patterns() holds the same patterns, in the same order.
    from harness.repo_eval import STEERING

    text = (REPO / "src" / "taskgen" / "task_draft.cc").read_text()
    body = text[text.index("steering_patterns() {") :]
    body = body[: body.index("};")]
    body = re.sub(r"//[^\n]*", "", body)
    assert tuple(re.findall(r'"([^"]+)"', body)) == STEERING
