"""The client of the celguard serve session API (docs/serve.md), its
sessions, and an answer decided as it streams.

This file is the one written by hand: _sync/client.py is generated from it
by unasync (python/gen_sync.py; a test checks it is up to date). Write it so
that removing async/await and renaming AsyncX to X gives the sync client.
"""

from __future__ import annotations

import uuid
from typing import Any, Mapping, Sequence

import httpx

from .._approvals import Approvals, Approved, Denied, Scope, raise_for, transport_error
from .._base import (
    DEFAULT_TIMEOUT,
    SECRET_WINDOW,
    Agent,
    _approvals_path,
    _approver_request,
    _approver_token,
    _AsyncPool,
    _call_body,
    _decode,
    _denials_path,
    _extra,
    _failure,
    _messages,
    _result_content,
    _session_body,
    _SessionBase,
    _settings,
    _StreamState,
)
from .._decision import Decision


class AsyncSession(_SessionBase):
    """A session: one agent run whose counters, halts and approvals celguard
    keeps. Make one with the client's session method."""

    def __init__(self, client: AsyncClient, session_id: str, agent: Agent | None, cwd: str | None) -> None:
        super().__init__(session_id, agent, cwd)
        self._client = client

    async def start_turn(self) -> int:
        """Start a turn; returns its number (0 when the service is unreachable:
        the next decision then blocks anyway)."""
        body = await self._client._post_json(self._path("turns/start"), {})
        turn = body.get("turn") if body else None
        self.turn = turn if isinstance(turn, int) else 0
        return self.turn

    async def end_turn(self) -> Decision:
        """End the turn (turn_end phase)."""
        return await self._client._decide(self._path("turns/end"), {}, "end of turn", "turn_end", "", "")

    async def before(self, tool: str, args: Mapping[str, Any], *, call_id: str | None = None,
                     agent: Agent | None = None, cwd: str | None = None) -> Decision:
        """Decide a call before it runs."""
        body = _call_body(tool, args, call_id, cwd or self.cwd, self._agent(agent))
        return await self._client._decide(self._path("before"), body, f"the call to {tool}", "before", tool,
                                          call_id or "")

    async def after(self, tool: str, args: Mapping[str, Any], content: Any, *, is_error: bool = False,
                    call_id: str | None = None, agent: Agent | None = None, cwd: str | None = None) -> Decision:
        """Decide a call's result after it ran."""
        body = _call_body(tool, args, call_id, cwd or self.cwd, self._agent(agent))
        body["result"] = {"is_error": is_error, "content": _result_content(content)}
        return await self._client._decide(self._path("after"), body, f"the result of {tool}", "after", tool,
                                          call_id or "")

    async def input(self, messages: Sequence[Mapping[str, Any]], *, call_id: str | None = None,
                    agent: Agent | None = None) -> Decision:
        """Decide the messages about to be sent to the model (input phase)."""
        body: dict[str, Any] = {"messages": _messages(messages)}
        _extra(body, call_id, self._agent(agent))
        return await self._client._decide(self._path("input"), body, "the model input", "input", "", call_id or "")

    async def output(self, text: str, content: Any = None, *, call_id: str | None = None,
                     agent: Agent | None = None) -> Decision:
        """Decide the model's answer (output phase)."""
        out: dict[str, Any] = {"text": text}
        if content is not None:
            out["content"] = _result_content(content)
        body: dict[str, Any] = {"output": out}
        _extra(body, call_id, self._agent(agent))
        return await self._client._decide(self._path("output"), body, "the model output", "output", "",
                                          call_id or "")

    def output_stream(self, *, holdback: int = SECRET_WINDOW, call_id: str | None = None,
                      agent: Agent | None = None) -> AsyncOutputStream:
        """An answer to decide as it streams (see AsyncOutputStream)."""
        return AsyncOutputStream(self, holdback=holdback, call_id=call_id, agent=agent)

    async def close(self) -> None:
        """End the session on this side; nothing is sent to the service.

        Deleting a session's state (its counters, halts and grants) is the
        operator's route, DELETE /v1/sessions/{id}: a session the agent
        could delete and start again would reset its own limits. The
        service forgets a session left unused for its idle time
        (--session-idle); its state in a store stays until that expires.
        """


class AsyncOutputStream:
    """A model's answer decided while it streams (output phase).

    feed each chunk as it arrives and pass on what it returns; finish at the
    end of the stream and pass on what it returns too. Nothing reaches the
    caller before celguard decided it: the last ``holdback`` characters
    (default SECRET_WINDOW, the longest secret celguard's scanner finds) are
    held back until more text, or the end, lets celguard see any secret they
    start whole. Each decision is on the whole answer so far:

    * allow, warn: the text is released (a warning is appended at the end);
    * modify: celguard's text is released instead (a redaction in flight);
      a rewrite of text already released cannot be applied and ends the
      stream with a notice;
    * block, halt, ask: the stream ends with the refusal; what was held back
      is never released.

    After the stream ended (``stopped``), feed returns "" and drops the rest.
    ``decision`` is the last decision, ``text`` everything released.
    """

    def __init__(self, session: AsyncSession, *, holdback: int = SECRET_WINDOW, call_id: str | None = None,
                 agent: Agent | None = None) -> None:
        self.session = session
        self.call_id = call_id
        self.agent = agent
        self._state = _StreamState(holdback)

    @property
    def text(self) -> str:
        """Everything released so far (what the user saw)."""
        return self._state.emitted

    @property
    def original(self) -> str:
        """Everything the model sent so far."""
        return self._state.original

    @property
    def decision(self) -> Decision | None:
        """The last decision (None before the first)."""
        return self._state.decision

    @property
    def stopped(self) -> bool:
        """Whether a block, halt, ask or a cut ended the stream."""
        return self._state.stopped

    async def feed(self, chunk: str) -> str:
        """Add a chunk; returns the text that may be released now ("" while
        it is held back)."""
        if not self._state.add(chunk):
            return ""
        return await self._decide(final=False)

    async def finish(self) -> str:
        """End of the stream: decide the whole answer and return the rest of
        what may be released (the refusal on a block)."""
        if self._state.stopped or self._state.finished:
            return ""
        return await self._decide(final=True)

    async def _decide(self, *, final: bool) -> str:
        d = await self.session.output(self._state.original, call_id=self.call_id, agent=self.agent)
        return self._state.apply(d, final)


class AsyncClient:
    """A client of celguard serve.

    url defaults to $CELGUARD_URL, else http://127.0.0.1:9743 (celguard
    serve's default); the bearer token comes from token, token_file,
    $CELGUARD_TOKEN_FILE or $CELGUARD_TOKEN. uds talks over a unix socket
    instead of TCP. approver_token (or approver_token_file) is the token of
    serve --approver-token-file, sent only by the approval methods; keep it
    out of the agent's reach. Every decision method fails closed: it returns
    a block with a code and never raises.
    """

    def __init__(self, url: str | None = None, *, token: str | None = None, token_file: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, uds: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, approver_token: str | None = None,
                 approver_token_file: str | None = None) -> None:
        base, headers = _settings(url, token, token_file)
        self._approver_token = _approver_token(approver_token, approver_token_file)
        self._pool = _AsyncPool(base, headers, timeout, transport, uds)

    async def session(self, session_id: str | None = None, *, agent: Agent | None = None, cwd: str | None = None,
                      meta: Mapping[str, Any] | None = None) -> AsyncSession:
        """Create or resume a session (idempotent for a given id; a fresh
        random id when none is given). Never raises: if the service is down,
        the session's decisions block."""
        sid = session_id or uuid.uuid4().hex
        await self._post_json("/v1/sessions", _session_body(sid, agent, meta))
        return AsyncSession(self, sid, agent, cwd)

    async def _decide(self, path: str, body: dict[str, Any], what: str, phase: str, tool: str,
                      call_id: str) -> Decision:
        try:
            resp = await self._pool.http().post(path, json=body)
        except Exception as exc:  # every failure is a block with a code
            return _failure(exc, what, phase, tool, call_id)
        return _decode(resp, what, phase, tool, call_id)

    async def _post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        try:
            resp = await self._pool.http().post(path, json=body)
            if resp.status_code != 200:
                return None
            out = resp.json()
        except Exception:  # the decisions that follow block
            return None
        return out if isinstance(out, dict) else None

    async def approvals(self, session_id: str) -> Approvals:
        """The session's pending approval requests and grants (approver token)."""
        what = "the approvals list"
        return Approvals.from_json(await self._approver("GET", _approvals_path(session_id), None, what, 200))

    async def approve(self, session_id: str, request_id: str, scope: Scope = "once") -> Approved:
        """Approve a pending request once (the identical call) or for the
        session (every call of the tool the rule asks about)."""
        body = {"request_id": request_id, "scope": scope}
        return Approved.from_json(await self._approver("POST", _approvals_path(session_id), body, "the approval",
                                                       200))

    async def deny(self, session_id: str, request_id: str, note: str = "", operator: str = "",
                   digest: str = "") -> Denied:
        """Deny a pending request: its exact call is refused for the rest of
        the session with ``note`` (what the agent reads) and asks no more.
        ``operator`` names the person for the server's decision log;
        ``digest``, when given, is the digest of the call they were shown. A
        request answered already raises ApprovalError ``stale_request`` (409),
        an unknown one ``no_such_request`` (404)."""
        body: dict[str, Any] = {"request_id": request_id}
        for key, value in (("note", note), ("operator", operator), ("digest", digest)):
            if value:
                body[key] = value
        return Denied.from_json(await self._approver("POST", _denials_path(session_id), body, "the denial", 200))

    async def revoke(self, session_id: str, approval_id: str) -> None:
        """Revoke a grant or drop a pending request: the call is asked again."""
        await self._approver("DELETE", _approvals_path(session_id, approval_id), None, "the revocation", 204)

    async def _approver(self, method: str, path: str, body: dict[str, Any] | None, what: str, ok: int) -> Any:
        http = self._pool.http()
        try:
            resp = await http.send(_approver_request(http, self._approver_token, method, path, body))
        except httpx.HTTPError as exc:
            raise transport_error(exc, what) from exc
        return raise_for(resp, what, ok)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._pool.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = ["AsyncClient", "AsyncOutputStream", "AsyncSession"]
