"""bench/scripted_model.py: the scripted model a long GPU run is driven by. Its writes must be
valid kernels of the task (each a different configuration), and its next call must follow the
run's log, not its own memory (a kill or a move must not make it skip or repeat a step)."""

import ast
import json
import sqlite3
import sys
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import scripted_model as sm  # noqa: E402


def test_each_write_is_python_and_a_new_configuration():
    script = sm.build_script()
    writes = [a["content"] for n, a in script if n == "write_file" and a["path"] == "kernel.py"]
    assert len(writes) > 20
    for text in writes:
        ast.parse(text)
    assert len(set(writes)) == len(writes)
    starter = (REPO / "tasks/mla/starter/kernel.py").read_text()
    knobs = sm.starter_knobs(starter)
    assert set(knobs) == {"BLOCK_H", "BLOCK_N", "NUM_WARPS", "NUM_STAGES"}
    for text in writes[:4]:  # the starter configurations come first
        values = {m["name"]: m["value"] for m in map(sm.KNOB_LINE.match, text.splitlines()) if m}
        assert set(values) == set(knobs) and all(values[k] in knobs[k] for k in knobs)


def test_decode_config_variant_changes_only_the_named_entries():
    ours = (REPO / "kernels/mla/kernel.py").read_text()
    out = sm.with_decode_config(ours, {"num_splits": 32, "gl_stages": 1})
    changed = [(a, b) for a, b in zip(ours.splitlines(), out.splitlines()) if a != b]
    assert changed == [
        ('    "num_splits": 0,', '    "num_splits": 32,'),
        ('    "gl_stages": 0,', '    "gl_stages": 1,'),
    ]
    try:
        sm.with_decode_config(ours, {"no_such_knob": 1})
    except ValueError as e:
        assert "no_such_knob" in str(e)
    else:
        raise AssertionError("an unknown entry must be refused")


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def test_the_next_call_is_indexed_by_the_turns_the_log_records(tmp_path):
    con = sqlite3.connect(tmp_path / "events.db")
    con.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, type TEXT, payload TEXT)")
    con.commit()
    tools = [{"type": "function", "function": {"name": "read_file"}}]
    with sm.ScriptedModel(tmp_path) as m:
        first = post(m.base_url, {"tools": tools})["choices"][0]["message"]["tool_calls"][0]["function"]
        again = post(m.base_url, {"tools": tools})["choices"][0]["message"]["tool_calls"][0]["function"]
        assert first == again  # nothing recorded yet: the same step again
        assert first["name"] == m.script[0][0]
        con.execute("INSERT INTO events (type, payload) VALUES ('model.response', '{\"purpose\": \"\"}')")
        con.execute("INSERT INTO events (type, payload) VALUES ('model.response', '{\"purpose\": \"compaction\"}')")
        con.commit()
        nxt = post(m.base_url, {"tools": tools})["choices"][0]["message"]["tool_calls"][0]["function"]
        assert nxt["name"] == m.script[1][0] and json.loads(nxt["arguments"]) == m.script[1][1]
        summary = post(m.base_url, {"messages": []})["choices"][0]
        assert summary["finish_reason"] == "stop" and "tool_calls" not in summary["message"]
    con.close()
