"""How much of a long run's prompt a provider's prefix cache can serve, and what that saves.

    python bench/prompt_cache.py --marathon build/marathon [--steps 1000] [--window 32000]
                                 [--model gpt-4.1] [--json FILE]

Runs `marathon run` on the tiny test task (tests/loop/fixtures/tiny-task) for --steps tool calls
against a scripted OpenAI-compatible server on 127.0.0.1 that emulates provider prefix caching the
way OpenAI documents it: a request's cached tokens are the longest prefix it shares with an earlier
request of the last five minutes, counted in whole 128-token blocks once the prefix reaches 1,024
tokens. The prefix is compared over the prompt in the order a provider reads it (tools, then each
message's JSON), and tokens are counted as 4 bytes each. The scripted model writes, reads and
evaluates the solution file and notes dead ends, as tests/context/binary_long_run.cc does; the
runtime's compaction summaries are answered by the same server.

Reports, from the server's record of every request:
  cacheable fraction   cached / prompt tokens over all model turns, and between compactions (the
                       first turn after each compaction that freed something, read from marathon's
                       log, left out: its prefix changed by design; summariser calls are not turns)
  cost                 the run's price at --model's list rates (src/llm/pricing.cc) with the cached
                       tokens at the cached-input rate, against every prompt token at the input rate;
                       and the cost marathon itself recorded (`marathon status --json`)
The same scripted run against an older marathon (one that puts the goal block first) shows what
the prompt order buys.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
TASK = ROOT / "tests/loop/fixtures/tiny-task"

# USD per million tokens: input, output, cached input (src/llm/pricing.cc).
PRICES = {"gpt-4.1": (2.00, 8.00, 0.50), "gpt-4o": (2.50, 10.00, 1.25), "gpt-5": (1.25, 10.00, 0.125)}

DEAD_ENDS = [
    "DEAD-END-A: doubling the value twice overflows the checker",
    "DEAD-END-B: negative values are rejected",
    "DEAD-END-C: writing the value in hex is not parsed",
]
PADDING = "".join(f"# padding line {i} of the solution\n" for i in range(60))
WINDOW_S = 300  # how long an emulated cache entry lives
BLOCK = 128  # cache granularity, tokens
MIN_CACHED = 1024  # shorter prefixes are not cached


def prompt_text(body: dict) -> str:
    """The prompt in the order the provider reads it: tools, then the messages."""
    parts = [json.dumps(body.get("tools", []), sort_keys=True, separators=(",", ":"))]
    for m in body.get("messages", []):
        parts.append(json.dumps(m, sort_keys=True, separators=(",", ":")))
    return "\n".join(parts)


def common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # the longest n with a[:n] == b[:n], by bisection on C-speed slice compares
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class CacheEmulator:
    def __init__(self) -> None:
        self.recent: list[tuple[float, str]] = []

    def cached_tokens(self, text: str) -> tuple[int, int]:
        now = time.monotonic()
        self.recent = [(t, s) for (t, s) in self.recent if now - t < WINDOW_S][-32:]
        best = max((common_prefix(text, s) for _, s in self.recent), default=0)
        self.recent.append((now, text))
        prompt = max(1, len(text) // 4)
        cached = best // 4
        cached = 0 if cached < MIN_CACHED else cached - cached % BLOCK
        return prompt, min(cached, prompt)


def is_summary(body: dict) -> bool:
    m = body.get("messages", [])
    return bool(m) and str(m[0].get("content", "")).startswith("You compact")


class Script:
    def __init__(self) -> None:
        self.step = 0
        self.lock = threading.Lock()
        self.cache = CacheEmulator()
        self.records: list[dict] = []

    def reply(self, body: dict) -> dict:
        with self.lock:
            prompt, cached = self.cache.cached_tokens(prompt_text(body))
            summary = is_summary(body)
            rec = {"prompt": prompt, "cached": cached, "summary": summary}
            if summary:
                message = {
                    "role": "assistant",
                    "content": "Summary: values 1..N written and evaluated; larger is better; "
                    "see the ledger for the dead ends.",
                }
                completion = 40
            else:
                s = self.step
                self.step += 1
                if s == 50:
                    calls = [("note", {"kind": "dead_end", "text": d}) for d in DEAD_ENDS]
                elif s % 20 == 19:
                    calls = [("evaluate", {"strategy": f"value {s}"})]
                elif s % 2 == 0:
                    calls = [("write_file", {"path": "solution.txt", "content": f"value = {s}\n{PADDING}"})]
                else:
                    calls = [("read_file", {"path": "solution.txt"})]
                message = {
                    "role": "assistant",
                    "content": f"step {s}",
                    "tool_calls": [
                        {
                            "id": f"call_{s}_{i}",
                            "type": "function",
                            "function": {"name": n, "arguments": json.dumps(a)},
                        }
                        for i, (n, a) in enumerate(calls)
                    ],
                }
                completion = 30
            rec["completion"] = completion
            self.records.append(rec)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }


def serve(script: Script) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            n = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(n))
            out = json.dumps(script.reply(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def mark_compactions(records: list[dict], events: list[dict]) -> None:
    """Marks each server record that is the first turn after a compaction (from marathon's log).

    The server saw the calls in log order: a turn per model.request, a summariser call per
    model.response with purpose compaction. A compaction (elision, summary or cut that freed
    something) changes the prompt's prefix by design, so the next turn's cache miss is not a fault
    of the prompt order."""
    calls = []
    compacted = False
    for e in events:
        t, p = e["type"], e.get("payload", {})
        if t.startswith("compaction.") and p.get("outcome") == "compacted":
            compacted = True
        elif t == "model.request":
            calls.append(("turn", compacted))
            compacted = False
        elif t == "model.response" and p.get("purpose") == "compaction":
            calls.append(("summary", False))
    if len(calls) != len(records):
        raise SystemExit(f"the log has {len(calls)} model calls, the server saw {len(records)}")
    for r, (kind, after) in zip(records, calls):
        if (kind == "summary") != r["summary"]:
            raise SystemExit("the log's model calls and the server's requests are not in the same order")
        r["after_compaction"] = after


def summarise(records: list[dict], price: tuple[float, float, float]) -> dict:
    turns = [r for r in records if not r["summary"]]
    between = [r for r in turns if not r.get("after_compaction")]
    p_in, p_out, p_cached = price

    def frac(rs: list[dict]) -> float:
        total = sum(r["prompt"] for r in rs)
        return sum(r["cached"] for r in rs) / total if total else 0.0

    prompt = sum(r["prompt"] for r in records)
    cached = sum(r["cached"] for r in records)
    completion = sum(r["completion"] for r in records)
    with_cache = ((prompt - cached) * p_in + cached * p_cached + completion * p_out) / 1e6
    without = (prompt * p_in + completion * p_out) / 1e6
    return {
        "requests": len(records),
        "model_turns": len(turns),
        "summariser_calls": len(records) - len(turns),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "completion_tokens": completion,
        "cached_fraction_all_turns": frac(turns),
        "cached_fraction_between_compactions": frac(between),
        "turns_between_compactions": len(between),
        "cost_with_cache_usd": with_cache,
        "cost_without_cache_usd": without,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--marathon", default=str(ROOT / "build/marathon"))
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--window", type=int, default=32000)
    ap.add_argument("--model", default="gpt-4.1", choices=sorted(PRICES))
    ap.add_argument("--task", default=str(TASK), help="the task folder (an older marathon needs its own)")
    ap.add_argument("--json", help="write the figures here as well")
    a = ap.parse_args()

    script = Script()
    server = serve(script)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    with tempfile.TemporaryDirectory(prefix="marathon-prompt-cache-") as tmp:
        run = pathlib.Path(tmp) / "run"
        env = dict(os.environ, OPENAI_API_KEY="bench-key")
        t0 = time.monotonic()
        cmd = [a.marathon, "run", a.task, "--run-dir", str(run), "--policy", "llm", "--model",
               f"openai:{a.model}", "--base-url", url, "--context-window", str(a.window),
               "--max-tool-calls", str(a.steps), "--quiet"]  # fmt: skip
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        elapsed = time.monotonic() - t0
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout + proc.stderr)
            return 1
        status = json.loads(
            subprocess.run([a.marathon, "status", str(run), "--json"], capture_output=True, text=True).stdout
        )
        log = subprocess.run([a.marathon, "log", str(run), "--json"], capture_output=True, text=True).stdout
        mark_compactions(script.records, [json.loads(line) for line in log.splitlines() if line.strip()])
    server.shutdown()
    out = summarise(script.records, PRICES[a.model])
    used = status.get("used") or status.get("budget", {}).get("used", {})
    out["marathon_recorded_cost_usd"] = used.get("cost_usd")
    out["tool_calls"] = used.get("tool_calls")
    out["compactions"] = status.get("compactions")
    out["wall_s"] = round(elapsed, 1)
    out["model"] = a.model
    out["window"] = a.window
    print(json.dumps(out, indent=2))
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
