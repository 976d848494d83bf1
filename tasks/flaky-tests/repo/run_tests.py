"""The suite's runner: every `test_*` function of tests/test_*.py, in a shuffled order.

    python3 run_tests.py                one run (seed 0); exit 1 when a test failed
    python3 run_tests.py --seed 7       one run with that order
    python3 run_tests.py --runs 20      20 runs (seeds 0..19), each in a fresh process; prints
                                        which tests failed, then the failure rate (the share of
                                        runs with a failed test) on the last line
    python3 run_tests.py --check        one run; exit 1 only when the suite itself is broken: a
                                        test module does not import, a test raises anything but
                                        a failed assertion, or there is no test at all

Each test runs once per run, in the order the seed gives; state left behind by a test (module
globals) is seen by the tests after it, as in any in-process runner.
"""

import importlib
import json
import os
import random
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def collect():
    """[(name, function)] in file order; import errors as [(module, message)]."""
    sys.path.insert(0, str(ROOT))
    tests, broken = [], []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        name = f"tests.{path.stem}"
        try:
            module = importlib.import_module(name)
        except Exception:
            broken.append((name, traceback.format_exc(limit=3)))
            continue
        for attr, fn in vars(module).items():
            if attr.startswith("test_") and callable(fn):
                tests.append((f"{path.name}::{attr}", fn))
    return tests, broken


def one_run(seed):
    tests, broken = collect()
    random.Random(seed).shuffle(tests)
    failed, errors = [], [f"{m}: {msg.strip().splitlines()[-1]}" for m, msg in broken]
    for name, fn in tests:
        try:
            fn()
        except AssertionError:
            failed.append(name)
        except Exception as e:
            errors.append(f"{name}: {type(e).__name__}: {e}")
    return {"seed": seed, "tests": len(tests), "failed": failed, "errors": errors}


def run_in_child(seed):
    """One run in a forked child (fresh module state: this process imports no test module)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        code = 1
        try:
            with os.fdopen(write_end, "w") as out:
                out.write(json.dumps(one_run(seed)))
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as inp:
        text = inp.read()
    _, status = os.waitpid(pid, 0)
    try:
        return json.loads(text)
    except ValueError:
        why = f"exit status {os.waitstatus_to_exitcode(status)}"
        return {"seed": seed, "tests": 0, "failed": [], "errors": [f"the run died ({why})"]}


def main(argv):
    args = dict(zip(argv[::2], argv[1::2])) if "--check" not in argv else {}
    if "--runs" in argv:
        runs = int(args["--runs"])
        bad = 0
        for seed in range(runs):
            r = run_in_child(seed)
            problems = r["failed"] + r["errors"]
            if problems or r["tests"] == 0:
                bad += 1
                print(f"seed {seed}: " + ("; ".join(problems) or "no tests ran"), file=sys.stderr)
        print(f"{bad} of {runs} runs failed", file=sys.stderr)
        print(bad / runs)
        return 0
    seed = int(args.get("--seed", 0))
    r = one_run(seed)
    for name in r["failed"]:
        print(f"FAILED {name}")
    for e in r["errors"]:
        print(f"ERROR {e}")
    print(f"{r['tests']} tests, {len(r['failed'])} failed, {len(r['errors'])} errors (seed {seed})")
    if "--check" in argv:
        return 1 if r["errors"] or r["tests"] == 0 else 0
    return 1 if r["failed"] or r["errors"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
