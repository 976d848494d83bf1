"""harness/repo_eval.py against a candidate that leaves a daemon behind. tasks/api-migration's
check imports the candidate's shop/; the candidate's shop/__init__.py starts a process in a
session of its own (setsid), which outlives the check's process group, waits for the metric's
tool (tools/count_legacy_calls.py), stops it, empties the files it is about to read, lets it go
on and puts the files back once it is done: the count reported would be 0 while the files hold
every use. Every process a command starts must die with its step, so the count reported is the
count of the files. Run both ways marathon runs it: the evaluator alone (no sandbox), and through
the real binary (`marathon eval`, in the sandbox's PID namespace)."""

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "tasks" / "api-migration"
EVALUATOR = REPO / "harness" / "repo_eval.py"
BINARY = Path(os.environ.get("MARATHON_BINARY", REPO / "build" / "marathon"))

# The daemon: argv[1] the tree, argv[2] a marker in its command line (so that the test can find
# a survivor). Polls /proc for the metric's tool; when it appears: SIGSTOP, empty shop/*.py,
# SIGCONT, wait for its end, restore the files.
DAEMON = r"""
import os, signal, sys, time
work = sys.argv[1]
shop = os.path.join(work, "shop")
files = [os.path.join(shop, f) for f in os.listdir(shop) if f.endswith(".py")]

def tool():
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if b"count_legacy_calls" in f.read():
                    return int(name)
        except OSError:
            pass

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2 :].split()[0] != b"Z"

end = time.time() + 110
while time.time() < end:
    pid = tool()
    if pid is None:
        time.sleep(0.0005)
        continue
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        continue
    saved = {}
    for f in files:
        with open(f, "rb") as h:
            saved[f] = h.read()
        with open(f, "w") as h:
            h.write("")
    os.kill(pid, signal.SIGCONT)
    while alive(pid):
        time.sleep(0.001)
    for f, data in saved.items():
        with open(f, "wb") as h:
            h.write(data)
    break
"""

SPAWN = """

def _leave_a_daemon():
    import os
    import subprocess
    import sys

    if os.path.isfile(os.path.join(os.getcwd(), "tools", "count_legacy_calls.py")):
        subprocess.Popen(
            [sys.executable, "-c", {daemon!r}, os.getcwd(), {marker!r}],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


_leave_a_daemon()
"""


def candidate(tmp_path, marker):
    """The starter with the daemon's launcher at the end of shop/__init__.py: the same uses of
    get_price as the starter, and every test still passes."""
    cand = tmp_path / "cand"
    shutil.copytree(TASK / "repo", cand)
    init = cand / "shop" / "__init__.py"
    init.write_text(init.read_text() + SPAWN.format(daemon=DAEMON, marker=marker))
    return cand


def count_in_files(cand):
    """What the metric's tool counts on the candidate's files, run here, with no daemon around."""
    p = subprocess.run(
        [sys.executable, "tools/count_legacy_calls.py"], cwd=cand, capture_output=True, text=True, check=True
    )
    return float(p.stdout.strip().splitlines()[-1])


def survivors(marker, seconds=5.0):
    """Processes whose command line holds `marker`, after up to `seconds` for them to go; killed."""
    end = time.monotonic() + seconds
    while True:
        left = []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        left.append(int(name))
            except OSError:
                pass
        if not left or time.monotonic() > end:
            break
        time.sleep(0.05)
    for pid in left:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    return left


def test_the_daemon_launcher_changes_nothing_the_metric_counts(tmp_path):
    cand = candidate(tmp_path, "marker-count")
    assert count_in_files(cand) == count_in_files(TASK / "repo") > 0


def test_a_daemon_started_by_the_check_dies_before_the_metric(tmp_path):
    marker = f"marathon-daemon-{uuid.uuid4().hex}"
    cand = candidate(tmp_path, marker)
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, MARATHON_TASK_DIR=str(TASK), MARATHON_CANDIDATE_DIR=str(cand), HOME=str(home))
    try:
        p = subprocess.run([sys.executable, str(EVALUATOR)], cwd=TASK, env=env, capture_output=True, timeout=200)
    finally:
        left = survivors(marker, 1.0)
    assert p.returncode == 0, p.stderr.decode()
    r = json.loads(p.stdout.decode().strip().splitlines()[-1])
    assert r["correct"] is True, r
    assert r["score"] == count_in_files(cand), r
    assert left == [], "the daemon outlived the evaluation"


@pytest.mark.skipif(not BINARY.exists(), reason=f"{BINARY} is not built")
def test_a_daemon_started_by_the_check_dies_before_the_metric_in_the_sandbox(tmp_path):
    marker = f"marathon-daemon-{uuid.uuid4().hex}"
    cand = candidate(tmp_path, marker)
    try:
        p = subprocess.run(
            [str(BINARY), "eval", str(TASK), "--candidate", str(cand), "--json"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        left = survivors(marker, 1.0)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["eval_status"] == "ok" and r["correct"] is True, r
    assert r["score"] == count_in_files(cand), r
    assert left == [], "the daemon outlived the sandbox"
