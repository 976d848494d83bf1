"""A scripted model for long GPU runs of tasks/mla: an OpenAI-compatible chat server on 127.0.0.1
(stdlib only) that explores, edits, evaluates and profiles kernels through the run's tools.

Its next tool call is a pure function of the run's log: the number of conversation turns the log
records (`model.response` events that are not compaction calls) indexes a fixed script. So the
script carries on where the log stands after a SIGKILL, on another machine after a move, and a
reply served but never recorded (a runner killed during the call) is served again. A compaction
call (no tools in the request) gets a short summary.

The script, one cycle per variant (each a handful of tool calls, as an agent reads before it
writes): phase 1 writes configurations of the task's starter (its `marathon:knob` lines), phase 2
writes our best-known kernel (kernels/mla) and profiles it, phase 3 writes variants of its decode
configuration. Variants are whole-file writes: `write_file` is re-run when a kill interrupted it,
so the workspace never drifts from what the script assumes (an interrupted `edit_file` is not).

    from scripted_model import ScriptedModel
    with ScriptedModel(run_dir, port=18431) as m:   # base URL: m.base_url
        ...   # marathon run tasks/mla --policy llm --model vllm:scripted --base-url ...
"""

from __future__ import annotations

import itertools
import json
import random
import re
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KNOB_LINE = re.compile(r"^(?P<name>[A-Z_]+) = (?P<value>\S+)(?P<rest>  # marathon:knob \[(?P<choices>[^\]]*)\].*)$")


def starter_knobs(text: str) -> dict[str, list[str]]:
    """The starter's knobs: name -> the values its `marathon:knob [..]` comment declares."""
    out = {}
    for line in text.splitlines():
        m = KNOB_LINE.match(line)
        if m:
            out[m["name"]] = [v.strip() for v in m["choices"].split(",")]
    return out


def with_knobs(text: str, values: dict[str, str]) -> str:
    def sub(line: str) -> str:
        m = KNOB_LINE.match(line)
        return f"{m['name']} = {values[m['name']]}{m['rest']}" if m and m["name"] in values else line

    return "\n".join(sub(line) for line in text.splitlines()) + "\n"


def with_decode_config(text: str, values: dict[str, int]) -> str:
    """Our kernel's source with DECODE_CONFIG entries replaced (each key appears once there)."""
    start = text.index("DECODE_CONFIG = {")
    end = text.index("}", start)
    block = text[start:end]
    for key, value in values.items():
        block, n = re.subn(rf'("{key}": )[^,\n]+,', rf"\g<1>{value},", block, count=1)
        if n != 1:
            raise ValueError(f"DECODE_CONFIG has no entry {key!r}")
    return text[:start] + block + text[end:]


def build_script(seed: int = 7) -> list[tuple[str, dict]]:
    rng = random.Random(seed)
    starter = (REPO / "tasks" / "mla" / "starter" / "kernel.py").read_text()
    knobs = starter_knobs(starter)
    names = list(knobs)
    configs = [dict(zip(names, vals)) for vals in itertools.product(*(knobs[n] for n in names))]
    rng.shuffle(configs)
    steps: list[tuple[str, dict]] = [
        ("list_files", {}),
        ("read_file", {"path": "kernel.py"}),
        ("note", {"kind": "strategy", "text": "tune the starter's tiles first, then write a split-KV kernel"}),
    ]
    for cfg in configs[:4]:
        label = " ".join(f"{k}={v}" for k, v in cfg.items())
        steps += [
            ("grep", {"pattern": "marathon:knob", "path": "kernel.py"}),
            ("read_file", {"path": "kernel.py", "start_line": 1, "end_line": 30}),
            ("read_file", {"path": "kernel.py", "start_line": 30, "end_line": 92}),
            ("write_file", {"path": "kernel.py", "content": with_knobs(starter, cfg)}),
            ("evaluate", {"strategy": f"starter with {label}"}),
            ("note", {"kind": "finding", "text": f"evaluated the starter with {label}"}),
            ("list_files", {}),
        ]
    steps.append(("profile", {}))
    ours = {p.name: p.read_text() for p in sorted((REPO / "kernels" / "mla").glob("*.py")) if p.name != "reference.py"}
    steps.append(("note", {"kind": "strategy", "text": "the starter is one pass with few programs: write split-KV"}))
    steps += [("write_file", {"path": name, "content": text}) for name, text in ours.items()]
    steps += [
        ("list_files", {}),
        ("evaluate", {"strategy": "split-KV decode with a fused log-sum-exp merge"}),
        ("profile", {}),
        ("grep", {"pattern": "DECODE_CONFIG", "path": "kernel.py"}),
    ]
    variants = [
        {"num_splits": s, "gl_stages": g, "gl_kslices": k}
        for s, g, k in itertools.product((16, 32, 64), (0, 1, 2), (0, 1, 2, 4))
        if (s, g, k) != (0, 0, 0)
    ]
    rng.shuffle(variants)
    for v in variants:
        label = " ".join(f"{k}={x}" for k, x in v.items())
        steps += [
            ("read_file", {"path": "kernel.py", "start_line": 50, "end_line": 68}),
            ("grep", {"pattern": "num_splits|gl_stages|gl_kslices", "path": "kernel.py"}),
            ("read_file", {"path": "decode_gluon.py", "start_line": 1, "end_line": 60}),
            ("read_file", {"path": "decode_gluon.py", "start_line": 60, "end_line": 140}),
            ("grep", {"pattern": "def decode_splits", "path": "kernel.py"}),
            ("read_file", {"path": "kernel.py", "start_line": 100, "end_line": 160}),
            ("note", {"kind": "strategy", "text": f"next: ours with {label}"}),
            ("write_file", {"path": "kernel.py", "content": with_decode_config(ours["kernel.py"], v)}),
            ("evaluate", {"strategy": f"ours with {label}"}),
            ("note", {"kind": "finding", "text": f"evaluated ours with {label}"}),
            ("list_files", {}),
        ]
    return steps


def turns_recorded(run_dir: Path) -> int:
    """Conversation turns the run's log holds (compaction calls left out)."""
    db = run_dir / "events.db"
    if not db.exists():
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = con.execute("SELECT payload FROM events WHERE type = 'model.response'").fetchall()
    finally:
        con.close()
    return sum(1 for (p,) in rows if not json.loads(p).get("purpose"))


class ScriptedModel:
    def __init__(self, run_dir: str | Path, port: int = 0, seed: int = 7):
        self.run_dir = Path(run_dir)
        self.script = build_script(seed)
        self.requests = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                model.requests += 1
                data = json.dumps(model.reply(request)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reply(self, request: dict) -> dict:
        n = turns_recorded(self.run_dir)
        if not request.get("tools"):
            message = {"role": "assistant", "content": f"Summary: {n} turns so far; starter tiles, then split-KV."}
            finish = "stop"
        else:
            name, args = self.script[n] if n < len(self.script) else ("finish", {"summary": "script done"})
            call = {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            message = {"role": "assistant", "content": f"step {n}: {name}", "tool_calls": [call]}
            finish = "tool_calls"
        return {
            "id": f"chatcmpl-{n}-{self.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
        }

    def __enter__(self) -> ScriptedModel:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
