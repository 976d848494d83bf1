#!/usr/bin/python3
"""The dashboard in a real browser: Debian's chromium, headless, driven by Selenium through Debian's
chromium-driver (nothing is downloaded). Run by ctest (tests/serve/extra.cmake) with the system
Python, which has python3-selenium.

Two runs of the tiny task are made by the scripted model (tests/fixtures/scripted_llm_server):
one that finishes, one that is still running while the page watches it. The test checks, on
`marathon serve`: one chart point per logged evaluation and one attempts row per attempt; a point
from the live run appearing without a reload; a goal edit from the page appending goal.changed to
the log. Then on the report of the live run opened from disk (file://, no server): the same counts,
the edited goal in its history, and that the page made no request at all. Screenshots go to --out.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:
    sys.exit(
        "browser_test: python3-selenium is missing (apt-get install python3-selenium; scripts/install-deps installs it)"
    )

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def tool_calls(calls, content=""):
    """An OpenAI chat completion asking for `calls` [(name, arguments)]."""
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": content,
                    "tool_calls": [
                        {
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                        for i, (name, args) in enumerate(calls)
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
    }


def write(value):
    return ("write_file", {"path": "solution.txt", "content": f"value = {value}\n"})


def evaluate(why):
    return ("evaluate", {"strategy": why})


def script(values, delay_s):
    """One JSONL line per model turn: write and evaluate each value (a non-number is an incorrect
    result), each turn after `delay_s`, then finish."""
    lines = [{"body": tool_calls([("note", {"kind": "strategy", "text": "raise the value"})])}]
    for v in values:
        lines.append({"body": tool_calls([write(v), evaluate(f"value {v}")]), "delay_s": delay_s})
    lines.append({"body": tool_calls([("finish", {"summary": "done"})]), "delay_s": delay_s})
    return "\n".join(json.dumps(line) for line in lines) + "\n"


class Processes:
    def __init__(self):
        self.procs = []

    def start(self, argv, **kw):
        p = subprocess.Popen(argv, start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def wait_for(what, predicate, timeout=30, every=0.1):
    until = time.time() + timeout
    last = None
    while time.time() < until:
        try:
            last = predicate()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 (the page may be mid-render)
            last = f"{type(e).__name__}: {e}"
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def log_events(marathon, run_dir):
    out = subprocess.run([marathon, "log", run_dir, "--json"], check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def count(events, type_):
    return sum(1 for e in events if e["type"] == type_)


CHART_POINTS = """
const c = Chart.getChart(arguments[0]);
if (!c) return -1;
return c.data.datasets.filter(d => d.marathonEval).reduce((n, d) => n + d.data.length, 0);
"""


def chart_points(driver, canvas_id):
    return driver.execute_script(CHART_POINTS, canvas_id)


def attempt_rows(driver):
    return len(driver.find_elements(By.CSS_SELECTOR, "#attempts tbody tr"))


def check_counts(driver, evals, where):
    for canvas in ("chart-calls", "chart-wall"):
        got = wait_for(f"{canvas} points on {where}", lambda c=canvas: chart_points(driver, c) == evals and evals, 20)
        assert got, f"{where}: {canvas} has {chart_points(driver, canvas)} points, the log {evals} evaluations"
    wait_for(f"{evals} attempts rows on {where}", lambda: attempt_rows(driver) == evals, 20)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--marathon", required=True)
    ap.add_argument("--scripted-server", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            sys.exit(
                f"browser_test: {path} is missing (apt-get install chromium chromium-driver; "
                "scripts/install-deps installs them)"
            )
    a.out = os.path.abspath(a.out)
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    tmp = tempfile.mkdtemp(prefix="marathon-browser-")
    runs = os.path.join(tmp, "runs")
    os.makedirs(runs)
    procs = Processes()
    driver = None
    try:

        def model(name, text):
            path = os.path.join(tmp, name + ".jsonl")
            with open(path, "w") as f:
                f.write(text)
            port_file = os.path.join(tmp, name + ".port")
            procs.start(
                [
                    a.scripted_server,
                    "--script",
                    path,
                    "--record",
                    os.path.join(tmp, name + ".record"),
                    "--port-file",
                    port_file,
                    "--index",
                    "turn",
                ],
                stdout=subprocess.DEVNULL,
            )
            port = wait_for(
                "the scripted model " + name, lambda: os.path.exists(port_file) and open(port_file).read().strip()
            )
            return f"http://127.0.0.1:{port}/v1"

        def run(name, base_url, **kw):
            return procs.start(
                [
                    a.marathon,
                    "run",
                    a.task,
                    "--run-dir",
                    os.path.join(runs, name),
                    "--policy",
                    "llm",
                    "--model",
                    "vllm:scripted",
                    "--base-url",
                    base_url,
                    "--quiet",
                ],
                stdout=subprocess.DEVNULL,
                **kw,
            )

        # A finished run: correct, incorrect and better results.
        done = run("finished", model("finished", script([2, 5, "x", 3, 7], 0)))
        assert done.wait(timeout=120) == 0, "the finished run failed"
        finished = os.path.join(runs, "finished")
        finished_evals = count(log_events(a.marathon, finished), "eval.finished")
        assert finished_evals == 5, finished_evals

        serve = procs.start([a.marathon, "serve", "--runs", runs, "--port", "0"], stdout=subprocess.PIPE, text=True)
        line = serve.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert m, f"serve printed no URL: {line!r}"
        url = m.group(1)

        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for arg in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1400,1500",
            "--no-first-run",
            "--disable-extensions",
        ):
            opts.add_argument(arg)
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
        driver.set_page_load_timeout(60)

        # The live run starts slowly: one evaluation every 3 s.
        live = run("live", model("live", script([1, 4, 6, 8, 9, 11], 3)))
        live_dir = os.path.join(runs, "live")
        wait_for("the live run's log", lambda: os.path.exists(os.path.join(live_dir, "events.db")))

        # Runs page.
        driver.get(url)
        wait_for("both runs listed", lambda: len(driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")) == 2)
        wait_for(
            "the live run shown running",
            lambda: "running" in driver.find_element(By.CSS_SELECTOR, "#runs tr[data-run=live]").text,
        )
        driver.save_screenshot(os.path.join(a.out, "runs.png"))

        # One finished run: a point per evaluation, a row per attempt.
        driver.get(url + "#run=finished")
        check_counts(driver, finished_evals, "the finished run")
        driver.find_element(By.CSS_SELECTOR, "#attempts tbody tr button.link").click()
        wait_for(
            "a candidate's diff", lambda: "against the starter" in driver.find_element(By.ID, "candidate-box").text
        )
        # Its charts: the baseline as a line, the direction in the axis title; a finished run's goal
        # buttons are disabled (the verbs would only be refused).
        chart_facts = driver.execute_script(
            "const c = Chart.getChart(document.getElementById('chart-calls'));"
            "const b = c.data.datasets.find(d => d.marathonBaseline);"
            "return [c.options.scales.y.title.text, b ? b.data.length : -1];"
        )
        assert chart_facts[0] == "score (higher is better)", chart_facts
        assert chart_facts[1] == 2, chart_facts
        for button in ("goal-pause", "goal-resume", "goal-save"):
            assert not driver.find_element(By.ID, button).is_enabled(), button
        driver.save_screenshot(os.path.join(a.out, "run-finished.png"))

        # The live run: a new point arrives without a reload.
        driver.get(url + "#run=live")
        wait_for("the live run's page", lambda: chart_points(driver, "chart-calls") >= 0)
        assert driver.find_element(By.ID, "goal-save").is_enabled(), "a running run takes goal verbs"
        driver.execute_script("window.__noReload = 'still here';")
        before = chart_points(driver, "chart-calls")
        wait_for("a new point from the live run", lambda: chart_points(driver, "chart-calls") > before, 60)
        assert driver.execute_script("return window.__noReload") == "still here", "page reloaded"
        evals_now = count(log_events(a.marathon, live_dir), "eval.finished")
        wait_for("the live chart to match the log", lambda: chart_points(driver, "chart-calls") >= evals_now, 20)
        driver.save_screenshot(os.path.join(a.out, "run-live.png"))

        # A goal edit from the page appends goal.changed.
        objective = "reach at least 11 (edited from the dashboard)"
        goal_before = count(log_events(a.marathon, live_dir), "goal.changed")
        driver.find_element(By.ID, "goal-text").send_keys(objective)
        driver.find_element(By.ID, "goal-save").click()
        wait_for(
            "the edited goal on the page", lambda: driver.find_element(By.ID, "goal-objective").text == objective, 20
        )
        changed = [e for e in log_events(a.marathon, live_dir) if e["type"] == "goal.changed"]
        assert len(changed) == goal_before + 1, changed
        assert changed[-1]["payload"]["verb"] == "edit", changed[-1]
        assert changed[-1]["payload"]["objective"] == objective, changed[-1]
        assert driver.execute_script("return window.__noReload") == "still here", "page reloaded"
        driver.save_screenshot(os.path.join(a.out, "goal-edited.png"))

        # Let the live run finish, then its report, opened from disk.
        assert live.wait(timeout=180) == 0, "the live run failed"
        live_events = log_events(a.marathon, live_dir)
        live_evals = count(live_events, "eval.finished")
        assert live_evals == 6, live_evals
        report = os.path.join(a.out, "report.html")
        subprocess.run([a.marathon, "report", live_dir, "-o", report], check=True, stdout=subprocess.DEVNULL)
        procs.stop_all()  # no server from here on
        driver.get("file://" + report)
        check_counts(driver, live_evals, "the report")
        history = driver.find_element(By.ID, "goal-history").text
        assert objective in history, history
        assert driver.find_element(By.ID, "candidate").get_attribute("data-candidate"), "no best"
        resources = driver.execute_script("return performance.getEntriesByType('resource').map(r => r.name)")
        assert resources == [], f"the report made requests: {resources!r}"
        driver.save_screenshot(os.path.join(a.out, "report.png"))
        print(f"browser_test: ok (screenshots in {a.out})")
    finally:
        if driver is not None:
            driver.quit()
        procs.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
