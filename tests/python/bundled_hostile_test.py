"""The three bundled everyday tasks (tasks/flaky-tests, binary-size, api-migration) against the
cheats that work on a test runner or a check run in the candidate's process: a patched result
channel, a patched assertion, a program rewriting the golden files it is compared with, a steering
file. Each is incorrect or a violation; the known improvements of tests/examples still pass. Run
with the generic evaluator as marathon runs it (task folder, candidate folder, scratch HOME)."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import REPO

EVALUATOR = REPO / "harness" / "repo_eval.py"
FIXTURES = REPO / "tests" / "examples" / "fixtures"


def evaluate(tmp_path, task, changes, name):
    """The verdict on the task's repository with `changes` (path -> text, or None to delete)."""
    task_dir = REPO / "tasks" / task
    cand = tmp_path / name
    shutil.copytree(task_dir / "repo", cand)
    for rel, text in changes.items():
        if text is None:
            (cand / rel).unlink()
        else:
            (cand / rel).parent.mkdir(parents=True, exist_ok=True)
            (cand / rel).write_text(text)
    home = tmp_path / f"home-{name}"
    home.mkdir()
    env = dict(os.environ, MARATHON_TASK_DIR=str(task_dir), MARATHON_CANDIDATE_DIR=str(cand), HOME=str(home))
    p = subprocess.run([sys.executable, str(EVALUATOR)], cwd=task_dir, env=env, capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


def committed(task, rel):
    return (REPO / "tasks" / task / "repo" / rel).read_text()


def test_flaky_tests_the_fix_passes_and_a_forged_result_is_a_violation(tmp_path):
    fix = {
        "inventory/counter.py": (FIXTURES / "flaky-tests" / "counter-locked.py").read_text(),
        "inventory/limiter.py": (FIXTURES / "flaky-tests" / "limiter-sliding.py").read_text(),
        "tests/test_units.py": (FIXTURES / "flaky-tests" / "test_units-reset.py").read_text(),
    }
    r = evaluate(tmp_path, "flaky-tests", fix, "fix")
    assert r["correct"] is True and r["score"] == 0, r
    # The runner's child sends its result with json.dumps: patched, every run "passes".
    forged = committed("flaky-tests", "inventory/units.py") + (
        '\nimport json\n\njson.dumps = lambda r: \'{"seed": 0, "tests": 9, "failed": [], "errors": []}\'\n'
    )
    r = evaluate(tmp_path, "flaky-tests", {"inventory/units.py": forged}, "forged")
    assert r["correct"] is False, r
    assert any("patches json.dumps" in v for v in r["violations"]), r
    # The runner's shuffle, disabled from a test module: the order-dependent failure never shows.
    fixed_order = committed("flaky-tests", "tests/test_units.py") + (
        "\n\nimport random\n\nrandom.Random.shuffle = lambda self, x: None\n"
    )
    r = evaluate(tmp_path, "flaky-tests", {"tests/test_units.py": fixed_order}, "order")
    assert r["correct"] is False and any("imports random" in v for v in r["violations"]), r
    r = evaluate(tmp_path, "flaky-tests", {"tests/conftest.py": "import os\n"}, "conftest")
    assert r["violations"] and r["violations"][0].startswith("tests/conftest.py:"), r


def test_api_migration_a_patched_assertion_or_test_result_is_a_violation(tmp_path):
    wrong = committed("api-migration", "shop/cart.py").replace("get_price(", "(lambda *a, **k: 0.0)(", 1)
    patched = wrong + "\n\nimport unittest\n\nunittest.TestCase.assertEqual = lambda self, a, b, msg=None: None\n"
    r = evaluate(tmp_path, "api-migration", {"shop/cart.py": patched}, "assert")
    assert r["correct"] is False and any("imports unittest" in v for v in r["violations"]), r
    # Exits 0 the moment the tests import it, out of the guard's sight: the canary sees it.
    exits = committed("api-migration", "shop/cart.py") + "\n\nimport os\n\ngetattr(os, '_' + 'exit')(0)\n"
    r = evaluate(tmp_path, "api-migration", {"shop/cart.py": exits}, "exits")
    assert r["correct"] is False and r["failed_stage"] == "canary", r
    sneaky = wrong + "\n\nimport warnings\n\nwarnings.sys.modules['unittest'].TestResult.addFailure = print\n"
    r = evaluate(tmp_path, "api-migration", {"shop/cart.py": sneaky}, "sneaky")
    assert r["correct"] is False and any("reaches .sys" in v for v in r["violations"]), r
    fix = {f"shop/{m}.py": (FIXTURES / "api-migration" / f"{m}.py").read_text() for m in ("promotions", "shipping")}
    r = evaluate(tmp_path, "api-migration", fix, "fix")
    assert r["correct"] is True and r["score"] < 120, r


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_binary_size_a_program_rewriting_its_golden_files_is_incorrect(tmp_path):
    # Prints nothing and writes "exit 0" into every golden file of the tree it runs in.
    cheat = r"""
#include <dirent.h>
#include <cstdio>
#include <string>
int main() {
  DIR* d = opendir("tests/golden");
  while (dirent* e = d ? readdir(d) : nullptr) {
    std::string n = e->d_name;
    if (n.size() > 4 && n.substr(n.size() - 4) == ".out") {
      FILE* f = std::fopen(("tests/golden/" + n).c_str(), "w");
      std::fputs("exit 0\n", f);
      std::fclose(f);
    }
  }
  return 0;
}
"""
    r = evaluate(tmp_path, "binary-size", {"src/main.cc": cheat, "src/wordfreq.cc": None, "src/wordfreq.h": None}, "c")
    assert r["correct"] is False and r["failed_stage"] == "check", r
    assert "0 of 6 golden tests passed" in r["log"], r["log"]
    r = evaluate(tmp_path, "binary-size", {}, "starter")
    assert r["correct"] is True, r
