"""`marathon mcp` driven by the official MCP Python SDK (`mcp` on PyPI) as the client: the lifecycle,
the tool list, evaluations of the cpu-matmul task's starter and of a wrong candidate, the result
cache on a repeat, resources, and the run log the session leaves (the same format as any run)."""

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from pydantic import AnyUrl

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "tasks" / "cpu-matmul"
BINARY = Path(os.environ.get("MARATHON_BINARY", REPO / "build" / "marathon"))

if not BINARY.exists():
    pytestmark = pytest.mark.skipif(
        not os.environ.get("CI"), reason=f"{BINARY} is not built (cmake --build build --target marathon)"
    )

# A kernel that compiles and breaks no rule but computes the wrong product (C = A, not A * B).
WRONG_KERNEL = """#include <cstring>
void matmul(const float* A, const float* B, float* C, int n) {
  (void)B;
  std::memcpy(C, A, sizeof(float) * static_cast<unsigned long>(n) * n);
}
"""


def server(run_dir: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(BINARY),
        args=["mcp", "--task", str(TASK), "--run-dir", str(run_dir)],
        env=dict(os.environ),  # MARATHON_PYTHON and PATH, as `make test` sets them
    )


def log_events(run_dir: Path) -> list[dict]:
    con = sqlite3.connect(f"file:{run_dir / 'events.db'}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT seq, type, payload FROM events ORDER BY seq").fetchall()
    finally:
        con.close()
    return [{"seq": s, "type": t, "payload": json.loads(p)} for s, t, p in rows]


async def session_script(run_dir: Path) -> dict:
    seen = {}
    async with stdio_client(server(run_dir)) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        seen["protocol"] = init.protocolVersion
        seen["server"] = init.serverInfo.name
        seen["tools"] = sorted(t.name for t in (await session.list_tools()).tools)

        starter = (TASK / "starter" / "kernel.cc").read_text()
        first = await session.call_tool("evaluate", {"files": {"kernel.cc": starter}, "strategy": "the starter"})
        wrong = await session.call_tool("evaluate", {"files": {"kernel.cc": WRONG_KERNEL}, "strategy": "C = A"})
        again = await session.call_tool("evaluate", {"files": {"kernel.cc": starter}, "strategy": "starter again"})
        outside = await session.call_tool("evaluate", {"files": {"harness.cc": "int x;"}})
        bad_args = await session.call_tool("note", {"kind": "rumour", "text": "x"})
        note = await session.call_tool("note", {"kind": "finding", "text": "the starter is correct"})
        seen["results"] = [first, wrong, again, outside, bad_args, note]
        seen["status"] = (await session.call_tool("status", {})).structuredContent
        seen["ledger"] = (await session.call_tool("ledger", {})).structuredContent
        seen["best"] = (await session.call_tool("best", {})).structuredContent

        resources = await session.list_resources()
        seen["resources"] = sorted(str(r.uri) for r in resources.resources)
        task = await session.read_resource(AnyUrl("marathon://task"))
        seen["task_text"] = task.contents[0].text
        best = await session.read_resource(AnyUrl("marathon://best/kernel.cc"))
        seen["best_text"] = best.contents[0].text
        try:
            await session.read_resource(AnyUrl("marathon://best/nothing.cc"))
            seen["missing_resource"] = None
        except Exception as e:  # the SDK raises McpError for an error response
            seen["missing_resource"] = getattr(getattr(e, "error", None), "code", str(e))
    return seen


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    if not shutil.which("g++"):
        pytest.skip("the cpu-matmul evaluator needs g++")
    run_dir = tmp_path_factory.mktemp("mcp") / "run"
    seen = anyio.run(session_script, run_dir)
    return run_dir, seen


def test_lifecycle_and_tools(session):
    _, seen = session
    assert seen["protocol"] == "2025-11-25"
    assert seen["server"] == "marathon"
    assert seen["tools"] == sorted(["evaluate", "profile", "status", "ledger", "best", "note", "revert"])


def test_starter_is_correct_and_a_wrong_candidate_is_not(session):
    _, seen = session
    first, wrong = seen["results"][0], seen["results"][1]
    assert not first.isError, first.content[0].text
    ev = first.structuredContent["evaluation"]
    assert ev["status"] == "ok" and ev["cached"] is False
    assert ev["result"]["correct"] is True
    assert ev["result"]["score"] > 0
    assert "correct: yes" in first.content[0].text

    ev_wrong = wrong.structuredContent["evaluation"]
    assert ev_wrong["cached"] is False
    assert ev_wrong["result"]["correct"] is False
    assert ev_wrong["candidate"] != ev["candidate"]
    assert "correct: NO" in wrong.content[0].text


def test_a_repeat_is_served_from_the_cache(session):
    _, seen = session
    first, again = seen["results"][0], seen["results"][2]
    ev, ev_again = first.structuredContent["evaluation"], again.structuredContent["evaluation"]
    assert ev_again["cached"] is True
    assert ev_again["candidate"] == ev["candidate"]
    assert ev_again["cache_key"] == ev["cache_key"]
    assert ev_again["result"] == ev["result"]
    assert seen["status"]["evaluations"] == 3
    assert seen["status"]["evaluations_executed"] == 2


def test_refusals_are_tool_errors_that_change_nothing(session):
    _, seen = session
    outside, bad_args, note = seen["results"][3], seen["results"][4], seen["results"][5]
    assert outside.isError and "not an editable file" in outside.content[0].text
    assert bad_args.isError and "kind" in bad_args.content[0].text
    assert not note.isError
    texts = [e["text"] for e in seen["ledger"]["entries"]]
    assert "the starter is correct" in texts and "x" not in texts


def test_resources_give_the_task_the_starter_and_the_best_candidate(session):
    _, seen = session
    assert seen["resources"] == ["marathon://best/kernel.cc", "marathon://starter/kernel.cc", "marathon://task"]
    assert "matmul" in seen["task_text"] and "speedup" in seen["task_text"]
    assert seen["best_text"] == (TASK / "starter" / "kernel.cc").read_text()
    assert seen["best"]["best_candidate"] == seen["results"][0].structuredContent["evaluation"]["candidate"]
    assert seen["missing_resource"] == -32002


def test_the_log_is_a_run_like_any_other(session):
    run_dir, _ = session
    events = log_events(run_dir)
    types = [e["type"] for e in events]
    assert types[0] == "run.created"
    assert events[0]["payload"]["config"]["policy"] == "mcp"
    evals = [e["payload"] for e in events if e["type"] == "eval.finished"]
    assert [e["cached"] for e in evals] == [False, False, True]
    started = [e["payload"] for e in events if e["type"] == "tool.started"]
    assert all(s.get("source") == "mcp" for s in started)
    # write_file + evaluate three times, then the note; the refused calls left nothing.
    assert [s["name"] for s in started] == ["write_file", "evaluate"] * 3 + ["note"]
    assert types.count("tool.finished") == len(started)
    assert types[-1] == "run.paused" and events[-1]["payload"]["reason"] == "session_ended"
    # The CLI reads it as it reads any run.
    status = subprocess.run([str(BINARY), "status", str(run_dir), "--json", "--verify"], capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["evaluations_executed"] == 2


def test_resume_of_an_mcp_run_is_refused_with_the_command_that_carries_it_on(session):
    run_dir, _ = session
    before = log_events(run_dir)
    r = subprocess.run([str(BINARY), "resume", str(run_dir)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "MCP run" in r.stderr and "marathon mcp --task" in r.stderr, r.stderr
    assert log_events(run_dir) == before  # nothing appended


def test_a_second_session_carries_on_the_same_run(session):
    run_dir, seen = session

    async def again():
        async with stdio_client(server(run_dir)) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            r = await s.call_tool("evaluate", {"files": {"kernel.cc": WRONG_KERNEL}, "strategy": "the wrong one again"})
            return r.structuredContent["evaluation"], (await s.call_tool("status", {})).structuredContent

    ev, status = anyio.run(again)
    assert ev["cached"] is True, "the cache is the run's: a new session does not pay again"
    assert status["evaluations_executed"] == 2
    assert status["run_id"] == seen["status"]["run_id"]


def test_a_run_moved_with_its_task_carries_on_there_and_another_task_is_refused(session, tmp_path):
    run_dir, seen = session
    moved_run, moved_task = tmp_path / "run", tmp_path / "tasks" / "cpu-matmul"
    shutil.copytree(run_dir, moved_run, ignore=shutil.ignore_patterns("lock"))
    shutil.copytree(TASK, moved_task)
    before = log_events(moved_run)

    other = tmp_path / "other"
    shutil.copytree(TASK, other)
    toml = (other / "task.toml").read_text()
    (other / "task.toml").write_text(toml.replace('name = "cpu-matmul"', 'name = "cpu-matmul-2"', 1))
    r = subprocess.run(
        [str(BINARY), "mcp", "--task", str(other), "--run-dir", str(moved_run)],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode != 0
    assert "not the task this run was created with" in r.stderr and "name" in r.stderr, r.stderr
    assert log_events(moved_run) == before  # nothing appended

    params = StdioServerParameters(
        command=str(BINARY),
        args=["mcp", "--task", str(moved_task), "--run-dir", str(moved_run)],
        env=dict(os.environ),
    )

    async def there():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            r = await s.call_tool("evaluate", {"files": {"kernel.cc": WRONG_KERNEL}, "strategy": "moved"})
            return r.structuredContent["evaluation"], (await s.call_tool("status", {})).structuredContent

    ev, status = anyio.run(there)
    assert ev["cached"] is True
    assert status["run_id"] == seen["status"]["run_id"]
    resumed = [e for e in log_events(moved_run) if e["type"] == "run.resumed"]
    assert resumed[-1]["payload"]["config"]["task_dir"] == str(moved_task)


class RawClient:
    """The wire itself, for what the SDK does not let a test do on purpose: bad lines, requests
    before initialize, cancelling a request at a chosen moment."""

    def __init__(self, run_dir: Path):
        self.proc = subprocess.Popen(
            [str(BINARY), "mcp", "--task", str(TASK), "--run-dir", str(run_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.messages = []

    def send(self, obj) -> None:
        self.proc.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
        self.proc.stdin.flush()

    def read(self) -> dict:
        line = self.proc.stdout.readline()
        assert line, "the server closed its output"
        msg = json.loads(line)
        self.messages.append(msg)
        return msg

    def until_id(self, id_) -> dict:
        while True:
            msg = self.read()
            if msg.get("id") == id_ and "method" not in msg:
                return msg

    def close(self) -> int:
        self.proc.stdin.close()
        rest = self.proc.stdout.read()
        self.messages += [json.loads(x) for x in rest.splitlines() if x.strip()]
        return self.proc.wait(timeout=60)


def initialize(c: RawClient) -> None:
    c.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
    assert c.until_id(0)["result"]["protocolVersion"] == "2025-06-18"
    c.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def test_bad_input_gets_errors_and_a_closed_input_ends_the_session(tmp_path):
    run_dir = tmp_path / "run"
    c = RawClient(run_dir)
    c.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert c.until_id(1)["error"]["code"] == -32001, "tools/list before initialize"
    c.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert c.until_id(2)["result"] == {}, "ping works at any time"
    initialize(c)
    c.send("{not json")
    assert c.read()["error"]["code"] == -32700
    c.send('[{"jsonrpc":"2.0","id":3,"method":"ping"}]')
    assert c.read()["error"]["code"] == -32600, "no batches since MCP 2025-06-18"
    c.send({"jsonrpc": "2.0", "id": 4, "method": "sampling/whatever"})
    assert c.until_id(4)["error"]["code"] == -32601
    c.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "rm_rf"}})
    assert c.until_id(5)["error"]["code"] == -32602
    c.send({"jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": {"uri": "file:///etc/passwd"}})
    assert c.until_id(6)["error"]["code"] == -32002
    c.send({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
    assert c.until_id(7)["error"]["code"] == -32600, "initialize twice"
    c.send(
        {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "tools/call",
            "params": {"name": "evaluate", "arguments": {"files": {"kernel.cc": 3}}},
        }
    )
    r = c.until_id(8)["result"]
    assert r["isError"] and "kernel.cc" in r["content"][0]["text"]
    c.send(
        '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"note","arguments":{"kind":"finding","text":"cut'
    )
    assert c.close() == 0
    assert c.messages[-1]["error"]["code"] == -32700, "a message cut short by the end of input is not run"
    types = [e["type"] for e in log_events(run_dir)]
    assert "tool.started" not in types, "nothing above ran a tool"
    assert types[-1] == "run.paused"


def test_progress_and_cancellation(tmp_path):
    if not shutil.which("g++"):
        pytest.skip("the cpu-matmul evaluator needs g++")
    run_dir = tmp_path / "run"
    c = RawClient(run_dir)
    initialize(c)
    starter = (TASK / "starter" / "kernel.cc").read_text()
    c.send(
        {
            "jsonrpc": "2.0",
            "id": "eval",
            "method": "tools/call",
            "params": {
                "name": "evaluate",
                "arguments": {"files": {"kernel.cc": starter}},
                "_meta": {"progressToken": "p1"},
            },
        }
    )
    first = c.read()
    assert first["method"] == "notifications/progress" and first["params"]["progressToken"] == "p1"
    # While the evaluation runs: a note waits behind it and is cancelled, so it never runs; the
    # evaluation itself is cancelled too, so its response is not sent (it finishes and is logged).
    c.send(
        {
            "jsonrpc": "2.0",
            "id": "note",
            "method": "tools/call",
            "params": {"name": "note", "arguments": {"kind": "finding", "text": "never"}},
        }
    )
    c.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "note", "reason": "changed my mind"},
        }
    )
    c.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "eval"}})
    c.send({"jsonrpc": "2.0", "id": "after", "method": "tools/call", "params": {"name": "status", "arguments": {}}})
    status = c.until_id("after")["result"]["structuredContent"]
    assert c.close() == 0
    assert not [m for m in c.messages if m.get("id") in ("eval", "note") and "method" not in m]
    assert [m["params"]["progress"] for m in c.messages if m.get("method") == "notifications/progress"] == [0, 1]
    assert status["evaluations_executed"] == 1, "the running evaluation finished and was counted"
    events = log_events(run_dir)
    assert [e["payload"]["cached"] for e in events if e["type"] == "eval.finished"] == [False]
    assert not [e for e in events if e["type"] == "ledger.noted"], "the cancelled note ran"
