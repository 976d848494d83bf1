"""The candidate's process for the judge (harness.judge): loads the candidate and calls it on the
judge's inputs, one command at a time.

Started by the judge with one end of a socket pair as argv[1]. Commands arrive pickled from the
judge (trusted: CUDA tensors and events come as IPC handles, so the judge owns every input and
output buffer this process touches). Everything this process says back is JSON bytes, plus the raw
bytes of an output; the judge parses and bounds those and never unpickles anything from here. The
harness code in this process runs beside the candidate's and is no more trusted than it: nothing
it says is taken without the judge's own check.

Commands (``op``): ``events`` (open the judge's go/done IPC events), ``null`` (wait for go, record
done: the judge's calibration, before any candidate code is loaded), ``load`` (import the
candidate), ``call`` (call it on inputs, send its outputs back), ``bind`` (keep inputs and output
buffers for the timed calls, warm up), ``go`` (wait for go, call, copy the outputs into the bound
buffers, record done; no synchronisation), ``exit``.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import traceback
from multiprocessing.connection import Connection
from pathlib import Path


def say(conn: Connection, **msg) -> None:
    conn.send_bytes(json.dumps(msg).encode())


def tensor_bytes(t) -> bytes:
    import torch

    return t.detach().contiguous().view(-1).view(torch.uint8).cpu().numpy().tobytes()


class Server:
    def __init__(self, conn: Connection):
        import torch
        import torch.multiprocessing  # noqa: F401 - the reductions the judge's pickles use

        self.torch = torch
        self.conn = conn
        self.gpu = torch.cuda.is_available()
        if not self.gpu:
            os.environ["TRITON_INTERPRET"] = "1"
            from . import interp_fix

            interp_fix.apply()
        self.fn = self.ref = None
        self.go = self.done = None
        self.live = self.outs = None

    def load(self, msg):
        import importlib.util

        from .import_guard import ImportGuard
        from .taskspec import load_reference

        self.ref = load_reference(Path(msg["task_dir"]))
        cand = Path(msg["candidate_dir"]).resolve()
        ImportGuard(tuple(msg["banned"]), cand).install()
        sys.path.insert(0, str(cand))
        spec = importlib.util.spec_from_file_location("kernel", cand / "kernel.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["kernel"] = mod
        spec.loader.exec_module(mod)
        self.fn = getattr(mod, self.ref.ENTRY, None)
        if not callable(self.fn):
            raise RuntimeError(f"kernel.py does not define {self.ref.ENTRY}()")

    def call(self, inputs):
        torch = self.torch
        torch.use_deterministic_algorithms(True, warn_only=True)  # unwritten outputs read as NaN
        outs = self.ref.call(self.fn, inputs)
        if self.gpu:
            torch.cuda.synchronize()
        torch.use_deterministic_algorithms(False)
        return outs

    def run(self) -> None:
        torch = self.torch
        say(self.conn, op="ready", gpu=self.gpu)
        while True:
            try:
                msg = pickle.loads(self.conn.recv_bytes())
            except EOFError:
                return
            op = msg.get("op")
            try:
                if op == "exit":
                    return
                if op == "events":
                    dev = torch.cuda.current_device()
                    self.go = torch.cuda.Event.from_ipc_handle(dev, msg["go"])
                    self.done = torch.cuda.Event.from_ipc_handle(dev, msg["done"])
                    say(self.conn, op="ok")
                elif op == "null":
                    torch.cuda.current_stream().wait_event(self.go)
                    self.done.record()
                    say(self.conn, op="enqueued")
                elif op == "load":
                    self.load(msg)
                    say(self.conn, op="ok")
                elif op == "call":
                    outs = self.call(msg["inputs"])
                    head = [
                        {"dtype": str(o.dtype).removeprefix("torch."), "shape": list(o.shape)}
                        if isinstance(o, torch.Tensor)
                        else None
                        for o in outs
                    ]
                    say(self.conn, op="outputs", outputs=head)
                    for o in outs:
                        if isinstance(o, torch.Tensor):
                            self.conn.send_bytes(tensor_bytes(o))
                elif op == "bind":
                    self.live, self.outs = msg["inputs"], msg["outputs"]
                    for _ in range(2):  # compile and autotune outside the timed calls
                        self.ref.call(self.fn, self.live)
                    torch.cuda.synchronize()
                    say(self.conn, op="ok")
                elif op == "go":
                    torch.cuda.current_stream().wait_event(self.go)
                    outs = self.ref.call(self.fn, self.live)
                    for dst, o in zip(self.outs, outs):
                        if dst is not None and isinstance(o, torch.Tensor) and o.shape == dst.shape:
                            dst.copy_(o)
                    self.done.record()
                    say(self.conn, op="enqueued")
                else:
                    say(self.conn, op="error", text=f"unknown command {op!r}")
            except BaseException as e:  # noqa: BLE001 - any failure is the judge's to report
                text = f"{type(e).__name__}: {str(e)[:300]}\n{traceback.format_exc(limit=6)[-1200:]}"
                say(self.conn, op="error", text=text)


def main() -> None:
    conn = Connection(int(sys.argv[1]))
    Server(conn).run()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
