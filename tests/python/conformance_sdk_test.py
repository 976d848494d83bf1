"""Every request body `marathon run` sends, checked against the request types of the official SDKs
(openai 3.63.0, anthropic 2.17.0): the real binary drives the tiny task against a scripted server on
127.0.0.1 whose replies are built from the SDKs' own response and stream-event models, and each
body it receives must validate as CompletionCreateParams / MessageCreateParams (pydantic's
TypeAdapter over the SDK's TypedDicts) with no key the types do not define. Every mode: tools,
streaming, reasoning effort, extended thinking, prompt caching, --temperature; a reasoning and a
non-reasoning model of each provider. Also: streamed Anthropic usage with the SDK's null counts
is logged as sent, and a replay of that run logs the same usage and cost; --max-cost on a model
with no price is refused unless --price-in/--price-out price it."""

from __future__ import annotations

import collections.abc
import json
import os
import sqlite3
import subprocess
import threading
import types
import typing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import typing_extensions
from anthropic.types import message_create_params as anthropic_params
from openai.types.chat import completion_create_params as openai_params
from pydantic import TypeAdapter

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "tests" / "loop" / "fixtures" / "tiny-task"
BINARY = Path(os.environ.get("MARATHON_BINARY", REPO / "build" / "marathon"))

if not BINARY.exists():
    pytestmark = pytest.mark.skipif(
        not os.environ.get("CI"), reason=f"{BINARY} is not built (cmake --build build --target marathon)"
    )


# --- the SDKs' request types, strictly ------------------------------------------------------------


def _strip(tp):
    """The type under Annotated / Required / NotRequired / ReadOnly."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated or origin is typing_extensions.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (
            typing_extensions.Required,
            typing_extensions.NotRequired,
            getattr(typing, "Required", None),
            getattr(typing, "NotRequired", None),
            getattr(typing_extensions, "ReadOnly", None),
        ) and typing.get_args(tp):
            tp = typing.get_args(tp)[0]
        else:
            return tp


def unknown_keys(value, tp, where="body") -> list[str]:
    """Where `value` has a key that the TypedDicts of `tp` do not define (or a value that no branch
    of a union takes): pydantic ignores extra keys of a TypedDict, the API refuses them."""
    tp = _strip(tp)
    origin = typing.get_origin(tp)
    if tp is typing.Any or tp is object:
        return []
    if origin in (typing.Union, types.UnionType):
        best = None
        for branch in typing.get_args(tp):
            errors = unknown_keys(value, branch, where)
            if not errors:
                return []
            if best is None or len(errors) < len(best):
                best = errors
        return best or [f"{where}: no branch of {tp} takes {value!r:.80}"]
    if origin is typing.Literal or origin is typing_extensions.Literal:
        return [] if value in typing.get_args(tp) else [f"{where}: {value!r} not in {typing.get_args(tp)}"]
    if typing_extensions.is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{where}: expected an object for {tp.__name__}"]
        hints = typing.get_type_hints(tp, include_extras=True)
        errors = [f"{where}.{k}: not a key of {tp.__name__}" for k in value if k not in hints]
        errors += [f"{where}.{k}: required by {tp.__name__}" for k in tp.__required_keys__ if k not in value]
        for k, v in value.items():
            if k in hints:
                errors += unknown_keys(v, hints[k], f"{where}.{k}")
        return errors
    if tp is type(None):
        return [] if value is None else [f"{where}: expected null"]
    if tp is str:
        return [] if isinstance(value, str) else [f"{where}: expected a string"]
    if tp is bool:
        return [] if isinstance(value, bool) else [f"{where}: expected a boolean"]
    if tp is int:
        return [] if isinstance(value, int) and not isinstance(value, bool) else [f"{where}: expected an integer"]
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return [] if ok else [f"{where}: expected a number"]
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, dict):
            return [f"{where}: expected an object"]
        args = typing.get_args(tp)
        vt = args[1] if len(args) == 2 else typing.Any
        return [e for k, v in value.items() for e in unknown_keys(v, vt, f"{where}.{k}")]
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence, tuple) or (
        isinstance(origin, type) and issubclass(origin, collections.abc.Iterable) and origin is not str
    ):
        if not isinstance(value, list):
            return [f"{where}: expected an array"]
        args = typing.get_args(tp)
        et = args[0] if args else typing.Any
        return [e for i, v in enumerate(value) for e in unknown_keys(v, et, f"{where}[{i}]")]
    return []  # a type this walk does not look into (pydantic still validates it)


OPENAI_TYPES = {
    False: openai_params.CompletionCreateParamsNonStreaming,
    True: openai_params.CompletionCreateParamsStreaming,
}
ANTHROPIC_TYPES = {
    False: anthropic_params.MessageCreateParamsNonStreaming,
    True: anthropic_params.MessageCreateParamsStreaming,
}


def check_request(path: str, body: dict) -> None:
    types_ = ANTHROPIC_TYPES if path.endswith("/messages") else OPENAI_TYPES
    tp = types_[bool(body.get("stream"))]
    TypeAdapter(tp).validate_python(body)  # raises on a wrong type or a missing required key
    errors = unknown_keys(body, tp)
    assert not errors, f"{path}: {errors}\n{json.dumps(body)[:2000]}"


def test_the_strict_check_refuses_what_the_api_would():
    good = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 5}
    check_request("/v1/chat/completions", good)
    for bad in (
        {**good, "max_output": 5},
        {**good, "messages": [{"role": "user", "content": "hi", "is_error": True}]},
        {**good, "reasoning_effort": "extreme"},
    ):
        with pytest.raises(Exception):  # noqa: B017 - pydantic's error or the strict walk's
            check_request("/v1/chat/completions", bad)
    with pytest.raises(AssertionError):  # the SDK has no sampling parameters for Claude any more
        check_request(
            "/v1/messages",
            {"model": "claude-sonnet-4-5", "max_tokens": 5, "temperature": 0.2, "messages": []},
        )


# --- replies from the SDKs' models ----------------------------------------------------------------


def openai_reply(call_name: str, arguments: dict, n: int) -> dict:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate(
        {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "scripted",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": f"Turn {n}.",
                        "tool_calls": [
                            {
                                "id": f"call_{n}",
                                "type": "function",
                                "function": {"name": call_name, "arguments": json.dumps(arguments)},
                            }
                        ],
                    },
                }
            ],
            "usage": {
                "prompt_tokens": 1200,
                "completion_tokens": 40,
                "total_tokens": 1240,
                "prompt_tokens_details": {"cached_tokens": 256},
            },
        }
    ).model_dump(mode="json")


def openai_stream(call_name: str, arguments: dict, n: int) -> list[dict]:
    from openai.types.chat import ChatCompletionChunk

    def chunk(choices, usage=None):
        return ChatCompletionChunk.model_validate(
            {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": "scripted",
                "choices": choices,
                "usage": usage,
            }
        ).model_dump(mode="json")

    args = json.dumps(arguments)
    half = len(args) // 2
    return [
        chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]),
        chunk([{"index": 0, "delta": {"content": f"Turn {n}."}, "finish_reason": None}]),
        chunk(
            [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": f"call_{n}",
                                "type": "function",
                                "function": {"name": call_name, "arguments": args[:half]},
                            }
                        ]
                    },
                    "finish_reason": None,
                }
            ]
        ),
        chunk(
            [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args[half:]}}]},
                    "finish_reason": None,
                }
            ]
        ),
        chunk([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]),
        chunk([], {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240}),
    ]


# The streamed usage: 25 uncached input tokens, 2,600 read from the cache, 1,500 written
# to it, 110 output tokens, with message_delta's optional counts null as the SDK serialises them.
USAGE_START = {
    "input_tokens": 25,
    "cache_read_input_tokens": 2600,
    "cache_creation_input_tokens": 1500,
    "output_tokens": 1,
}
USAGE_DELTA = {
    "output_tokens": 110,
    "input_tokens": None,
    "cache_read_input_tokens": None,
    "cache_creation_input_tokens": None,
    "server_tool_use": None,
}


def anthropic_blocks(n: int, tool: tuple[str, dict] | None, text: str, thinking: bool) -> list[dict]:
    blocks = []
    if thinking:
        blocks.append({"type": "thinking", "thinking": f"Plan for turn {n}.", "signature": f"sig-{n}"})
    blocks.append({"type": "text", "text": text})
    if tool:
        blocks.append({"type": "tool_use", "id": f"toolu_{n}", "name": tool[0], "input": tool[1]})
    return blocks


def anthropic_reply(n: int, tool, text: str, stop: str, thinking: bool) -> dict:
    from anthropic.types import Message

    return Message.model_validate(
        {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "scripted",
            "content": anthropic_blocks(n, tool, text, thinking),
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": USAGE_START | {"output_tokens": 110},
        }
    ).model_dump(mode="json")


def anthropic_stream(n: int, tool, text: str, stop: str, thinking: bool) -> list[dict]:
    from anthropic.types import (
        RawContentBlockDeltaEvent,
        RawContentBlockStartEvent,
        RawContentBlockStopEvent,
        RawMessageDeltaEvent,
        RawMessageStartEvent,
        RawMessageStopEvent,
    )

    dump = lambda model, d: model.model_validate(d).model_dump(mode="json")  # noqa: E731
    events = [
        dump(
            RawMessageStartEvent,
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{n}",
                    "type": "message",
                    "role": "assistant",
                    "model": "scripted",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": USAGE_START,
                },
            },
        )
    ]
    for i, block in enumerate(anthropic_blocks(n, tool, text, thinking)):
        start, deltas = dict(block), []
        if block["type"] == "thinking":
            start.update(thinking="", signature="")
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        elif block["type"] == "text":
            start["text"] = ""
            deltas = [{"type": "text_delta", "text": block["text"]}]
        else:
            start["input"] = {}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        events.append(
            dump(RawContentBlockStartEvent, {"type": "content_block_start", "index": i, "content_block": start})
        )
        for d in deltas:
            events.append(dump(RawContentBlockDeltaEvent, {"type": "content_block_delta", "index": i, "delta": d}))
        events.append(dump(RawContentBlockStopEvent, {"type": "content_block_stop", "index": i}))
    events.append(
        dump(
            RawMessageDeltaEvent,
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": USAGE_DELTA},
        )
    )
    events.append(dump(RawMessageStopEvent, {"type": "message_stop"}))
    return events


# --- the scripted server --------------------------------------------------------------------------


class Scripted:
    """Answers POSTs on 127.0.0.1 from `turns` (by the number of assistant turns in the request, a
    paused turn sent back counted, so a retried request gets the same answer) and records each
    (path, body)."""

    def __init__(self, turns):
        self.turns = turns
        self.requests: list[tuple[str, dict]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append((self.path, body))
                anthropic = self.path.endswith("/messages")
                done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
                if self.path not in ("/v1/chat/completions", "/v1/messages") or done >= len(owner.turns):
                    self.send_response(404 if done < len(owner.turns) else 400)
                    self.end_headers()
                    return
                reply = owner.turns[done](bool(body.get("stream")))
                if isinstance(reply, list):  # server-sent events
                    out = b""
                    for e in reply:
                        name = f"event: {e['type']}\n" if anthropic else ""
                        out += f"{name}data: {json.dumps(e)}\n\n".encode()
                    if not anthropic:
                        out += b"data: [DONE]\n\n"
                    ctype = "text/event-stream"
                else:
                    out, ctype = json.dumps(reply).encode(), "application/json"
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def openai_turns():
    note = ("note", {"kind": "finding", "text": "the value line is the score"})
    finish = ("finish", {"summary": "done"})

    def turn(n, call):
        return lambda stream: openai_stream(*call, n) if stream else openai_reply(*call, n)

    return [turn(0, note), turn(1, finish)]


def anthropic_turns(thinking: bool):
    note = ("note", {"kind": "finding", "text": "the value line is the score"})
    finish = ("finish", {"summary": "done"})

    def turn(n, tool, text, stop):
        def make(stream):
            f = anthropic_stream if stream else anthropic_reply
            return f(n, tool, text, stop, thinking)

        return make

    # The second reply is paused (a server tool's long turn) and ends in whitespace.
    return [
        turn(0, note, "Noting it.", "tool_use"),
        turn(1, None, "Still looking.  \n", "pause_turn"),
        turn(2, finish, "Done.", "tool_use"),
    ]


def run_marathon(tmp_path: Path, model: str, base_url: str, flags: list[str], name: str = "run"):
    run_dir = tmp_path / name
    env = dict(os.environ, OPENAI_API_KEY="sk-scripted", ANTHROPIC_API_KEY="sk-ant-scripted")
    argv = [str(BINARY), "run", str(TASK), "--run-dir", str(run_dir), "--policy", "llm", "--model", model]
    argv += ["--base-url", base_url, "--max-tool-calls", "10", "--quiet", *flags]
    p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    return p, run_dir


def log_events(run_dir: Path) -> list[dict]:
    con = sqlite3.connect(f"file:{run_dir / 'events.db'}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT seq, type, payload FROM events ORDER BY seq").fetchall()
    finally:
        con.close()
    return [{"seq": s, "type": t, "payload": json.loads(p)} for s, t, p in rows]


def responses(run_dir: Path) -> list[dict]:
    return [e["payload"] for e in log_events(run_dir) if e["type"] == "model.response"]


# --- every mode, each provider's reasoning and non-reasoning model --------------------------------

OPENAI_CASES = [
    ("openai:gpt-4o", "/v1", []),
    ("openai:gpt-4o", "/v1", ["--stream", "--temperature", "0.4"]),
    ("openai:gpt-4.1-mini", "/v1/", ["--temperature", "0"]),
    ("openai:o3", "/v1", ["--reasoning-effort", "high"]),
    ("openai:o4-mini", "/v1/", []),
    ("openai:gpt-5", "/v1", ["--stream", "--reasoning-effort", "minimal", "--temperature", "0.4"]),
    ("openai:gpt-5-mini-2025-08-07", "/v1", ["--stream"]),
]


@pytest.mark.parametrize("model,base,flags", OPENAI_CASES, ids=[f"{m} {' '.join(f)}" for m, _, f in OPENAI_CASES])
def test_openai_requests_are_what_the_sdk_types_allow(tmp_path, model, base, flags):
    server = Scripted(openai_turns())
    try:
        p, run_dir = run_marathon(tmp_path, model, server.root + base, flags)
    finally:
        server.close()
    assert p.returncode == 0, p.stderr
    assert len(server.requests) == 2, p.stderr
    reasoning = model.split(":")[1].startswith(("o3", "o4", "gpt-5"))
    for path, body in server.requests:
        check_request(path, body)
        assert body["tools"] and body["tool_choice"] == "auto"
        assert ("stream" in body) == ("--stream" in flags)
        if "--stream" in flags:
            assert body["stream_options"] == {"include_usage": True}
        if reasoning:
            assert "temperature" not in body and "max_tokens" not in body
            assert body["max_completion_tokens"] > 0
        else:
            assert ("temperature" in body) == ("--temperature" in flags)
        if "--reasoning-effort" in flags:
            assert body["reasoning_effort"] == flags[flags.index("--reasoning-effort") + 1]
    # The tool's result goes back as a tool message (the prompt ends with the live tail: a user
    # message with the goal block, docs/context.md).
    assert any(m["role"] == "tool" for m in server.requests[1][1]["messages"])
    if reasoning and "--temperature" in flags:
        assert "--temperature 0.4: gpt-5 takes no sampling parameters" in p.stderr
    usage = [(r["usage"]["prompt_tokens"], r["usage"]["completion_tokens"]) for r in responses(run_dir)]
    assert usage == [(1200, 40), (1200, 40)]


ANTHROPIC_CASES = [
    ("anthropic:claude-3-5-haiku-20241022", "", []),
    ("anthropic:claude-3-5-haiku-20241022", "/v1", ["--stream", "--temperature", "0.3"]),
    ("anthropic:claude-sonnet-4-5", "", ["--thinking-budget", "2048"]),
    ("anthropic:claude-sonnet-4-5", "/v1", ["--stream", "--thinking-budget", "2048"]),
    ("anthropic:claude-haiku-4-5", "/v1/", ["--stream"]),
]


@pytest.mark.parametrize(
    "model,base,flags", ANTHROPIC_CASES, ids=[f"{m}{b} {' '.join(f)}" for m, b, f in ANTHROPIC_CASES]
)
def test_anthropic_requests_are_what_the_sdk_types_allow(tmp_path, model, base, flags):
    thinking = "--thinking-budget" in flags
    server = Scripted(anthropic_turns(thinking))
    try:
        p, run_dir = run_marathon(tmp_path, model, server.root + base, flags)
    finally:
        server.close()
    assert p.returncode == 0, p.stderr
    assert [path for path, _ in server.requests] == ["/v1/messages"] * 3, p.stderr
    for path, body in server.requests:
        if "--temperature" in flags:
            # Sent because asked for and the model takes it; the SDK's types have no sampling
            # parameters any more, so it is checked apart.
            assert body.pop("temperature") == 0.3
        check_request(path, body)
        assert "temperature" not in body
        assert ("stream" in body) == ("--stream" in flags)
        assert body["tools"]
        # Prompt caching: the system prompt and the conversation's newest turn carry breakpoints.
        assert any("cache_control" in b for b in body["system"]), body["system"]
        if thinking:
            assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
            assert body["max_tokens"] > 2048
    # The paused turn went back as the final assistant turn, without its trailing whitespace.
    last = server.requests[2][1]["messages"][-1]
    assert last["role"] == "assistant"
    texts = [b["text"] for b in last["content"] if b["type"] == "text"]
    assert texts == ["Still looking."], last
    if thinking:
        assert last["content"][0] == {"type": "thinking", "thinking": "Plan for turn 1.", "signature": "sig-1"}
    for r in responses(run_dir):
        u = r["usage"]
        assert (u["prompt_tokens"], u["completion_tokens"]) == (4125, 110), r
        assert (u["cache_read_tokens"], u["cache_write_tokens"]) == (2600, 1500), r
    assert not [e for e in log_events(run_dir) if e["type"] == "llm.usage_rejected"]


# --- streamed usage, cost and replay --------------------------------------------------------------


def test_a_replay_of_a_streamed_anthropic_run_logs_the_same_usage_and_cost(tmp_path):
    server = Scripted(anthropic_turns(thinking=True))
    try:
        p, run_dir = run_marathon(
            tmp_path, "anthropic:claude-sonnet-4-5", server.root, ["--stream", "--thinking-budget", "2048"]
        )
    finally:
        server.close()
    assert p.returncode == 0, p.stderr
    original = responses(run_dir)
    assert len(original) == 3
    # $3 / $15 per Mtok, cache reads $0.30, 5-minute cache writes $3.75.
    want = (25 * 3.0 + 2600 * 0.30 + 1500 * 3.75 + 110 * 15.0) / 1e6
    for r in original:
        assert r["cost_usd"] == pytest.approx(want, rel=1e-9), r
    replay_dir = tmp_path / "replay"
    q = subprocess.run(
        [str(BINARY), "replay", str(run_dir), "--run-dir", str(replay_dir), "--quiet"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert q.returncode == 0, q.stdout + q.stderr
    replayed = responses(replay_dir)
    assert [(r["usage"], r["cost_usd"]) for r in replayed] == [(r["usage"], r["cost_usd"]) for r in original]


# --- prices ---------------------------------------------------------------------------------------


def test_max_cost_on_a_model_with_no_price_is_refused_unless_priced_on_the_command_line(tmp_path):
    server = Scripted(openai_turns())
    try:
        p, run_dir = run_marathon(tmp_path, "openai:gpt-5.2", server.root + "/v1", ["--max-cost", "5"])
        assert p.returncode == 2, p.stderr
        assert "--max-cost 5: model openai:gpt-5.2 has no price" in p.stderr
        assert "--price-in USD/Mtok --price-out USD/Mtok" in p.stderr
        assert not server.requests
        p, run_dir = run_marathon(
            tmp_path,
            "openai:gpt-5.2",
            server.root + "/v1",
            ["--max-cost", "5", "--price-in", "2", "--price-out", "10"],
            name="priced",
        )
        assert p.returncode == 0, p.stderr
        costs = [r["cost_usd"] for r in responses(run_dir)]
        # 1,200 prompt tokens (no cached rate given: all at the input rate) and 40 completion tokens.
        assert costs == [pytest.approx((1200 * 2 + 40 * 10) / 1e6)] * 2
        p, _ = run_marathon(tmp_path, "openai:gpt-5.2", server.root + "/v1", ["--price-in", "2"], name="half")
        assert p.returncode == 2 and "--price-in and --price-out go together" in p.stderr
    finally:
        server.close()
