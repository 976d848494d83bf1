"""`profile` through a run's tool on a GPU machine: a scripted model (an OpenAI-compatible server on
127.0.0.1, stdlib only) writes our kernel's files into the workspace of tasks/TASK, calls `profile`
twice (the second must be served from the log, not run again) and the run ends on its tool-call
budget. Prints what the model saw and writes OUT_DIR/profile-TASK.md with it, the head of the
whole report (the blob `recall` pages through) and the timings.

    python3 bench/profile_check.py OUT_DIR TASK...    (marathon on PATH; scripts/gpu-check's
                                                       profile step; TASK: kda, mla)
"""

from __future__ import annotations

import datetime
import json
import pathlib
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPO = pathlib.Path(__file__).resolve().parent.parent


def kernel_files(task: str) -> dict[str, str]:
    """Our best-known kernel of `task`: kernel.py and the modules beside it that it loads."""
    folder = REPO / "kernels" / task
    return {p.name: p.read_text() for p in sorted(folder.glob("*.py")) if p.name != "reference.py"}


def script(task: str) -> list[tuple[str, dict]]:
    calls = [("write_file", {"path": name, "content": text}) for name, text in kernel_files(task).items()]
    return calls + [("profile", {}), ("profile", {})]


class Scripted(BaseHTTPRequestHandler):
    calls: list[tuple[str, dict]] = []
    served = 0
    lock = threading.Lock()

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        with Scripted.lock:
            n = Scripted.served
            Scripted.served += 1
        name, args = Scripted.calls[n] if n < len(Scripted.calls) else ("finish", {"summary": "profiled"})
        body = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "scripted",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": f"step {n}",
                        "tool_calls": [
                            {
                                "id": f"call_{n}",
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def profile_results(run_dir: pathlib.Path) -> list[dict]:
    con = sqlite3.connect(f"file:{run_dir / 'events.db'}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT type, payload FROM events ORDER BY seq").fetchall()
        out = []
        for t, p in rows:
            d = json.loads(p)
            if t == "tool.finished" and d.get("name") == "profile":
                sha = d.get("output_sha") or ""
                blob = con.execute("SELECT bytes FROM blobs WHERE sha256 = ?", (sha,)).fetchone() if sha else None
                d["report"] = bytes(blob[0]).decode(errors="replace") if blob else ""
                out.append(d)
        return out
    finally:
        con.close()


def check(out: pathlib.Path, task: str) -> bool:
    Scripted.calls = script(task)
    Scripted.served = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    run_dir = out / f"profile-run-{task}"
    budget = len(Scripted.calls)
    t0 = time.monotonic()
    p = subprocess.run(
        ["marathon", "run", str(REPO / "tasks" / task), "--run-dir", str(run_dir), "--policy", "llm",
         "--model", "vllm:scripted", "--base-url", f"http://127.0.0.1:{server.server_address[1]}/v1",
         "--max-tool-calls", str(budget), "--quiet"],
        capture_output=True, text=True,
    )  # fmt: skip
    elapsed = time.monotonic() - t0
    server.shutdown()
    found = profile_results(run_dir) if (run_dir / "events.db").exists() else []
    lines = [f"# profile through a run's tool: tasks/{task}", ""]
    lines.append(
        f"{datetime.date.today()}, `python3 bench/profile_check.py OUT {task}`; run exit {p.returncode}, {elapsed:.1f} s"
    )
    for i, f in enumerate(found):
        lines += [
            "",
            f"## call {i + 1} (ok {f.get('ok')}, {f.get('elapsed_s', 0):.1f} s)",
            "",
            "```",
            f.get("output", ""),
            "```",
        ]
        if f.get("report"):
            lines += ["", "whole report, first 6000 characters:", "", "```", f["report"][:6000], "```"]
    text = "\n".join(lines) + "\n"
    (out / f"profile-{task}.md").write_text(text)
    print(text[:5000])
    if p.returncode != 0:
        print(p.stdout[-3000:], p.stderr[-3000:])
    served = len(found) == 2 and "served from the log" in found[1].get("output", "")
    print(f"profile {task}: {len(found)} calls, second served from the log: {served}")
    return len(found) == 2 and bool(found[0].get("ok")) and served


def main() -> int:
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    ok = True
    for task in sys.argv[2:] or ["mla", "kda"]:
        ok = check(out, task) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
