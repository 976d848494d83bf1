"""`marathon mcp --task tasks/mla` over stdio on a GPU machine: evaluate our MLA kernel, the same
files again (the result cache must answer), then profile it. Prints one line per call.

    python3 bench/mcp_check.py OUT_DIR    (marathon on PATH; scripts/gpu-check's mcp step)

A plain JSON-RPC client over the pipes: the GPU machine has no MCP SDK and no package registry.
The server's protocol is checked with the official SDK by tests/python/test_mcp_server.py.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent


class Client:
    def __init__(self, run_dir: pathlib.Path):
        self.p = subprocess.Popen(
            ["marathon", "mcp", "--task", str(REPO / "tasks/mla"), "--run-dir", str(run_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.n = 0

    def send(self, msg: dict) -> None:
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def call(self, method: str, params: dict | None = None) -> dict:
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params or {}})
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"marathon mcp exited (status {self.p.wait()}) during {method}")
            r = json.loads(line)
            if r.get("id") == self.n:
                return r

    def close(self) -> int:
        self.p.stdin.close()
        return self.p.wait(timeout=60)


def main() -> int:
    c = Client(pathlib.Path(sys.argv[1]) / "mcp-run")
    c.call(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "gpu-check", "version": "1"},
        },
    )
    c.send({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}})
    names = ("kernel.py", "decode_gluon.py", "reference.py")
    files = {f: (REPO / "kernels/mla" / f).read_text() for f in names}
    failed = 0
    for name, args in (
        ("evaluate", {"files": files, "strategy": "our kernel, over MCP"}),
        ("evaluate", {"files": files, "strategy": "the same again (cache)"}),
        ("profile", {}),
    ):
        res = c.call("tools/call", {"name": name, "arguments": args}).get("result", {})
        text = "".join(part.get("text", "") for part in res.get("content", []))
        failed += bool(res.get("isError"))
        print(name, "isError" if res.get("isError") else "ok", text[:1500].replace("\n", " | "))
    return 1 if c.close() or failed else 0


if __name__ == "__main__":
    sys.exit(main())
