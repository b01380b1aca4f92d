"""What the sync and async clients share (docs/serve.md): settings, request
bodies, how an answer or a failure becomes a Decision, the connection pools,
and the state of an output decided as it streams.

The async client is written once (_async/client.py); the sync one
(_sync/client.py) is generated from it with unasync (python/gen_sync.py).

Both fail closed: a transport error, a timeout, a status other than 200, a
body that is not a Decision or any other failure of the client becomes a
block Decision with a code (``service_unavailable``, ``service_timeout``,
``service_error``, ``invalid_response``, ``client_error``). They never raise
for a decision.

The approval methods (approvals, approve, revoke) are not decisions: they
send the approver token (never the decision token) and raise ApprovalError
with the server's code on any answer other than success.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence
from urllib.parse import quote

import httpx

from ._common import refusal_text, warning_text
from ._decision import (
    CODE_BAD_RESPONSE,
    CODE_CLIENT_ERROR,
    CODE_HTTP_ERROR,
    CODE_TIMEOUT,
    CODE_UNAVAILABLE,
    Decision,
)
from ._version import __version__

DEFAULT_URL = "http://127.0.0.1:9743"
"""Where the clients look when neither an argument nor CELGUARD_URL says."""

DEFAULT_TIMEOUT = 5.0
"""Seconds the clients wait for a decision before blocking (service_timeout)."""


@dataclass(frozen=True)
class Agent:
    """The agent making calls: a name and the ids (repository, org, ...) that
    scoped counters and halts key on."""

    name: str = ""
    ids: Mapping[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        """The agent as the API takes it."""
        out: dict[str, Any] = {}
        if self.name:
            out["name"] = self.name
        if self.ids:
            out["ids"] = dict(self.ids)
        return out


def _settings(url: str | None, token: str | None, token_file: str | None) -> tuple[str, dict[str, str]]:
    base = (url or os.environ.get("CELGUARD_URL") or DEFAULT_URL).rstrip("/")
    tok = token
    path = token_file or os.environ.get("CELGUARD_TOKEN_FILE")
    if tok is None and path:
        with open(path, encoding="utf-8") as f:
            tok = f.read().strip()
    if tok is None:
        tok = os.environ.get("CELGUARD_TOKEN") or None
    headers = {"Content-Type": "application/json", "User-Agent": f"celguard-python/{__version__}"}
    if tok:
        headers["Authorization"] = f"Bearer {tok}"
    return base, headers


def _approver_token(token: str | None, token_file: str | None) -> str | None:
    if token is None and token_file:
        with open(token_file, encoding="utf-8") as f:
            token = f.read().strip()
    return token or None


def _approvals_path(session_id: str, tail: str = "") -> str:
    path = f"/v1/sessions/{quote(session_id, safe='')}/approvals"
    return f"{path}/{quote(tail, safe='')}" if tail else path


def _denials_path(session_id: str) -> str:
    return f"/v1/sessions/{quote(session_id, safe='')}/denials"


def _approver_request(http: httpx.Client | httpx.AsyncClient, token: str | None, method: str, path: str,
                      body: dict[str, Any] | None = None) -> httpx.Request:
    req = http.build_request(method, path, json=body)
    # The decision token is not the approver's: never send it here.
    req.headers.pop("Authorization", None)
    if token:
        req.headers["Authorization"] = f"Bearer {token}"
    return req


def _failure(exc: Exception, what: str, phase: str, tool: str, call_id: str) -> Decision:
    """The block for a request that got no answer: a timeout, a transport
    error, or any other failure of the client (a closed event loop, a
    transport of the caller's that raised)."""
    if isinstance(exc, httpx.TimeoutException):
        return Decision.fail_closed(CODE_TIMEOUT, f"celguard did not answer {what} in time: {exc}",
                                    phase=phase, tool=tool, call_id=call_id)
    if isinstance(exc, httpx.HTTPError):
        return Decision.fail_closed(CODE_UNAVAILABLE, f"celguard could not be reached for {what}: {exc}",
                                    phase=phase, tool=tool, call_id=call_id)
    return Decision.fail_closed(CODE_CLIENT_ERROR,
                                f"the celguard client failed asking for {what}: {type(exc).__name__}: {exc}",
                                phase=phase, tool=tool, call_id=call_id)


def _decode(resp: httpx.Response, what: str, phase: str, tool: str, call_id: str) -> Decision:
    if resp.status_code != 200:
        detail = ""
        try:
            body = resp.json()
            err = body.get("error") if isinstance(body, dict) else None
            if isinstance(err, dict):
                detail = f": {err.get('code', '')} {err.get('message', '')}".rstrip()
        except ValueError:
            pass
        return Decision.fail_closed(CODE_HTTP_ERROR, f"celguard answered {what} with HTTP {resp.status_code}{detail}",
                                    phase=phase, tool=tool, call_id=call_id)
    try:
        body = resp.json()
    except ValueError:
        return Decision.fail_closed(CODE_BAD_RESPONSE, f"celguard answered {what} with a body that is not JSON",
                                    phase=phase, tool=tool, call_id=call_id)
    return Decision.from_json(body, phase=phase, tool=tool, call_id=call_id)


def _call_body(tool: str, args: Mapping[str, Any], call_id: str | None, cwd: str | None,
               agent: Agent | None) -> dict[str, Any]:
    body: dict[str, Any] = {"tool": tool, "args": dict(args)}
    if call_id:
        body["call_id"] = call_id
    if cwd:
        body["cwd"] = cwd
    if agent is not None and agent.to_json():
        body["agent"] = agent.to_json()
    return body


def _result_content(content: Any) -> Any:
    """Tool results as JSON: values json cannot write become their str()."""
    try:
        json.dumps(content)
        return content
    except (TypeError, ValueError):
        return str(content)


def _messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        msg: dict[str, Any] = {"role": str(m.get("role", "")), "content": m.get("content") or ""}
        if not isinstance(msg["content"], str):
            msg["content"] = json.dumps(_result_content(msg["content"]))
        if m.get("name"):
            msg["name"] = str(m["name"])
        out.append(msg)
    return out


class _SessionBase:
    def __init__(self, session_id: str, agent: Agent | None, cwd: str | None) -> None:
        self.session_id = session_id
        self.agent = agent
        self.cwd = cwd
        self.turn = 0

    def _path(self, tail: str) -> str:
        return f"/v1/sessions/{quote(self.session_id, safe='')}/{tail}"

    def _agent(self, agent: Agent | None) -> Agent | None:
        return agent if agent is not None else self.agent


def _extra(body: dict[str, Any], call_id: str | None, agent: Agent | None) -> None:
    if call_id:
        body["call_id"] = call_id
    if agent is not None and agent.to_json():
        body["agent"] = agent.to_json()


def _session_body(session_id: str, agent: Agent | None, meta: Mapping[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"session_id": session_id}
    if agent is not None and agent.to_json():
        body["agent"] = agent.to_json()
    if meta:
        body["meta"] = dict(meta)
    return body




class _SyncPool:
    """The sync client's connection pool: one httpx.Client."""

    def __init__(self, base: str, headers: dict[str, str], timeout: float, transport: httpx.BaseTransport | None,
                 uds: str | None) -> None:
        if transport is None and uds:
            transport = httpx.HTTPTransport(uds=uds)
        self._http = httpx.Client(base_url=base, headers=headers, timeout=timeout, transport=transport,
                                  trust_env=False)

    def http(self) -> httpx.Client:
        """The pool."""
        return self._http

    def close(self) -> None:
        """Close the pool."""
        self._http.close()


class _AsyncPool:
    """The async client's connection pool, one per event loop.

    An httpx.AsyncClient's connections belong to the loop that opened them:
    reused from another loop (two asyncio.run calls), they fail with "Event
    loop is closed". So the pool is made again, with a transport of its own,
    whenever the running loop is not the one it was made on. A transport the
    caller gave is reused as is (it is theirs to make loop-safe).
    """

    def __init__(self, base: str, headers: dict[str, str], timeout: float,
                 transport: httpx.AsyncBaseTransport | None, uds: str | None) -> None:
        self._base, self._headers, self._timeout = base, headers, timeout
        self._transport, self._uds = transport, uds
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def http(self) -> httpx.AsyncClient:
        """The pool of the running loop (RuntimeError outside one)."""
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop:
            # The old pool's connections belong to a loop that is gone or
            # elsewhere: drop it (closing it would need that loop).
            transport = self._transport
            if transport is None and self._uds:
                transport = httpx.AsyncHTTPTransport(uds=self._uds)
            self._http = httpx.AsyncClient(base_url=self._base, headers=self._headers, timeout=self._timeout,
                                           transport=transport, trust_env=False)
            self._loop = loop
        return self._http

    async def close(self) -> None:
        """Close the pool of the running loop, if it is that loop's."""
        http, self._http = self._http, None
        if http is not None and self._loop is asyncio.get_running_loop():
            await http.aclose()


SECRET_WINDOW = 8193
"""How many characters of a streamed answer are held back before they are
released: the longest match of celguard's secret scanner (8192 bytes, an
Authorization header or a JWT; stdlib/secrets.go) plus the one character it
reads past a match. A secret is therefore whole in the text decided before
any character of it could be released."""


class _StreamState:
    """The bookkeeping of an answer decided as it streams (the clients'
    OutputStream and AsyncOutputStream do the asking).

    Every decision is on the whole answer so far (what the output phase would
    see at the end). What it allows, or its rewrite, is released except the
    last ``holdback`` characters, which wait for more text; a rewrite that
    changes text already released cannot be applied any more and cuts the
    stream; a block, halt or ask ends it with the refusal.
    """

    def __init__(self, holdback: int) -> None:
        if holdback < 0:
            raise ValueError("holdback must not be negative")
        self.holdback = holdback
        self.original = ""
        self.emitted = ""
        self.decided = 0
        self.decision: Decision | None = None
        self.stopped = False
        self.finished = False
        self.warnings: list[str] = []

    def add(self, chunk: str) -> bool:
        """Add a chunk; whether the answer should be decided now."""
        if self.stopped or self.finished:
            return False
        self.original += chunk
        return len(self.original) - self.decided > self.holdback

    def apply(self, d: Decision, final: bool) -> str:
        """Apply a decision on the whole of ``original``; the text to release."""
        self.decision = d
        self.decided = len(self.original)
        if final:
            self.finished = True
        if d.verdict == "warn" and warning_text(d) not in self.warnings:
            self.warnings.append(warning_text(d))
        if d.verdict in ("allow", "warn"):
            text = self.original
        elif d.verdict == "modify" and d.output is not None and isinstance(d.output.get("text"), str):
            text = str(d.output["text"])
        else:
            return self._stop(refusal_text(d))
        if not text.startswith(self.emitted):
            return self._stop(f"[celguard withheld the rest of this answer] {d.describe()}")
        upto = len(text) if final else max(len(self.emitted), len(text) - self.holdback)
        out = text[len(self.emitted):upto]
        if final and self.warnings:
            out += ("\n" if self.emitted or out else "") + "\n".join(self.warnings)
        self.emitted += out
        return out

    def _stop(self, notice: str) -> str:
        self.stopped = True
        out = ("\n" if self.emitted else "") + notice
        self.emitted += out
        return out
