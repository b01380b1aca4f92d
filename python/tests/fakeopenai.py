"""A scripted OpenAI Chat Completions server on 127.0.0.1 for the hosts that
talk to OpenAI (Prompty's openai provider, the Agents SDK's
OpenAIChatCompletionsModel). Each request pops the next scripted step; every
request body is recorded so a test can read what the model was sent. A
request with "stream": true is answered with server-sent chunks, the text
cut every chunk_size characters (so a secret arrives split across chunks);
sent_chunks records the text deltas as they left."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_call(name: str, args: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    """A step answering with one tool call."""
    return {"tool": name, "args": args, "id": call_id or f"call_{name}"}


def text(content: str) -> dict[str, Any]:
    """A step answering with text."""
    return {"text": content}


class FakeOpenAI:
    """The server; use as a context manager. url is its base URL (…/v1)."""

    def __init__(self, script: list[dict[str, Any]], chunk_size: int = 7) -> None:
        self.script = list(script)
        self.chunk_size = chunk_size
        self.requests: list[dict[str, Any]] = []
        self.sent_chunks: list[str] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                with outer._lock:
                    outer.requests.append(body)
                    step = outer.script.pop(0) if outer.script else {"text": "(script exhausted)"}
                if body.get("stream"):
                    self._stream(step, body.get("model", "fake"))
                    return
                out = json.dumps(_completion(step, body.get("model", "fake"))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def _stream(self, step: dict[str, Any], model: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in _chunks(step, model, outer.chunk_size):
                    delta = chunk["choices"][0]["delta"].get("content") if chunk["choices"] else None
                    if delta:
                        outer.sent_chunks.append(delta)
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self._srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._srv.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._srv.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._srv.shutdown()
        self._srv.server_close()

    def sent_text(self) -> str:
        """Everything the model was sent, as one string."""
        return json.dumps(self.requests)


def _completion(step: dict[str, Any], model: str) -> dict[str, Any]:
    if "tool" in step:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{
                "id": step["id"],
                "type": "function",
                "function": {"name": step["tool"], "arguments": json.dumps(step["args"])},
            }],
        }
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": step["text"]}
        finish = "stop"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _chunks(step: dict[str, Any], model: str, size: int) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    out = [chunk({"role": "assistant", "content": ""})]
    if "tool" in step:
        args = json.dumps(step["args"])
        out.append(chunk({"tool_calls": [{"index": 0, "id": step["id"], "type": "function",
                                          "function": {"name": step["tool"], "arguments": ""}}]}))
        for i in range(0, len(args), size):
            out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[i:i + size]}}]}))
        out.append(chunk({}, "tool_calls"))
    else:
        text = step["text"]
        out.extend(chunk({"content": text[i:i + size]}) for i in range(0, len(text), size))
        out.append(chunk({}, "stop"))
    return out
