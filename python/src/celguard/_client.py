"""Sync and async clients for the celguard serve session API (docs/serve.md).

Both fail closed: a transport error, a timeout, a status other than 200 or a
body that is not a Decision becomes a block Decision with a code
(``service_unavailable``, ``service_timeout``, ``service_error``,
``invalid_response``). They never raise for a decision.

The approval methods (approvals, approve, revoke) are not decisions: they
send the approver token (never the decision token) and raise ApprovalError
with the server's code on any answer other than success.
"""

from __future__ import annotations

import json
import os
import uuid
from urllib.parse import quote
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import httpx

from ._approvals import Approvals, Approved, Scope, raise_for, transport_error
from ._decision import (
    CODE_BAD_RESPONSE,
    CODE_HTTP_ERROR,
    CODE_TIMEOUT,
    CODE_UNAVAILABLE,
    Decision,
)

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
    headers = {"Content-Type": "application/json", "User-Agent": "celguard-python/0.1"}
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


def _approver_request(http: httpx.Client | httpx.AsyncClient, token: str | None, method: str, path: str,
                      body: dict[str, Any] | None = None) -> httpx.Request:
    req = http.build_request(method, path, json=body)
    # The decision token is not the approver's: never send it here.
    req.headers.pop("Authorization", None)
    if token:
        req.headers["Authorization"] = f"Bearer {token}"
    return req


def _failure(exc: Exception, what: str, phase: str, tool: str, call_id: str) -> Decision:
    if isinstance(exc, httpx.TimeoutException):
        return Decision.fail_closed(CODE_TIMEOUT, f"celguard did not answer {what} in time: {exc}",
                                    phase=phase, tool=tool, call_id=call_id)
    return Decision.fail_closed(CODE_UNAVAILABLE, f"celguard could not be reached for {what}: {exc}",
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


class Session(_SessionBase):
    """A session of the sync client: one agent run whose counters, halts and
    approvals celguard keeps. Make one with Client.session."""

    def __init__(self, client: Client, session_id: str, agent: Agent | None, cwd: str | None) -> None:
        super().__init__(session_id, agent, cwd)
        self._client = client

    def start_turn(self) -> int:
        """Start a turn; returns its number (0 when the service is unreachable:
        the next decision then blocks anyway)."""
        body = self._client._post_json(self._path("turns/start"), {})
        turn = body.get("turn") if body else None
        self.turn = turn if isinstance(turn, int) else 0
        return self.turn

    def end_turn(self) -> Decision:
        """End the turn (turn_end phase)."""
        return self._client._decide(self._path("turns/end"), {}, "end of turn", "turn_end", "", "")

    def before(self, tool: str, args: Mapping[str, Any], *, call_id: str | None = None,
               agent: Agent | None = None, cwd: str | None = None) -> Decision:
        """Decide a call before it runs."""
        body = _call_body(tool, args, call_id, cwd or self.cwd, self._agent(agent))
        return self._client._decide(self._path("before"), body, f"the call to {tool}", "before", tool, call_id or "")

    def after(self, tool: str, args: Mapping[str, Any], content: Any, *, is_error: bool = False,
              call_id: str | None = None, agent: Agent | None = None, cwd: str | None = None) -> Decision:
        """Decide a call's result after it ran."""
        body = _call_body(tool, args, call_id, cwd or self.cwd, self._agent(agent))
        body["result"] = {"is_error": is_error, "content": _result_content(content)}
        return self._client._decide(self._path("after"), body, f"the result of {tool}", "after", tool, call_id or "")

    def input(self, messages: Sequence[Mapping[str, Any]], *, call_id: str | None = None,
              agent: Agent | None = None) -> Decision:
        """Decide the messages about to be sent to the model (input phase)."""
        body: dict[str, Any] = {"messages": _messages(messages)}
        _extra(body, call_id, self._agent(agent))
        return self._client._decide(self._path("input"), body, "the model input", "input", "", call_id or "")

    def output(self, text: str, content: Any = None, *, call_id: str | None = None,
               agent: Agent | None = None) -> Decision:
        """Decide the model's answer (output phase)."""
        out: dict[str, Any] = {"text": text}
        if content is not None:
            out["content"] = _result_content(content)
        body: dict[str, Any] = {"output": out}
        _extra(body, call_id, self._agent(agent))
        return self._client._decide(self._path("output"), body, "the model output", "output", "", call_id or "")

    def close(self) -> None:
        """Delete the session on the service (best effort)."""
        self._client._delete(f"/v1/sessions/{quote(self.session_id, safe='')}")


class AsyncSession(_SessionBase):
    """A session of the async client (see Session)."""

    def __init__(self, client: AsyncClient, session_id: str, agent: Agent | None, cwd: str | None) -> None:
        super().__init__(session_id, agent, cwd)
        self._client = client

    async def start_turn(self) -> int:
        """Start a turn; returns its number (0 when the service is unreachable)."""
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

    async def close(self) -> None:
        """Delete the session on the service (best effort)."""
        await self._client._delete(f"/v1/sessions/{quote(self.session_id, safe='')}")


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


class Client:
    """A sync client of celguard serve.

    url defaults to $CELGUARD_URL, else http://127.0.0.1:9743 (celguard serve's default); the bearer
    token comes from token, token_file, $CELGUARD_TOKEN_FILE or
    $CELGUARD_TOKEN. uds talks over a unix socket instead of TCP. approver_token (or
    approver_token_file) is the token of serve --approver-token-file, sent only by the
    approval methods; keep it out of the agent's reach.
    """

    def __init__(self, url: str | None = None, *, token: str | None = None, token_file: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, uds: str | None = None,
                 transport: httpx.BaseTransport | None = None, approver_token: str | None = None,
                 approver_token_file: str | None = None) -> None:
        base, headers = _settings(url, token, token_file)
        self._approver_token = _approver_token(approver_token, approver_token_file)
        if transport is None and uds:
            transport = httpx.HTTPTransport(uds=uds)
        self._http = httpx.Client(base_url=base, headers=headers, timeout=timeout, transport=transport,
                                  trust_env=False)

    def session(self, session_id: str | None = None, *, agent: Agent | None = None, cwd: str | None = None,
                meta: Mapping[str, Any] | None = None) -> Session:
        """Create or resume a session (idempotent for a given id; a fresh
        random id when none is given). Never raises: if the service is down,
        the session's decisions block."""
        sid = session_id or uuid.uuid4().hex
        self._post_json("/v1/sessions", _session_body(sid, agent, meta))
        return Session(self, sid, agent, cwd)

    def _decide(self, path: str, body: dict[str, Any], what: str, phase: str, tool: str, call_id: str) -> Decision:
        try:
            resp = self._http.post(path, json=body)
        except httpx.HTTPError as exc:
            return _failure(exc, what, phase, tool, call_id)
        return _decode(resp, what, phase, tool, call_id)

    def _post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        try:
            resp = self._http.post(path, json=body)
            if resp.status_code != 200:
                return None
            out = resp.json()
        except (httpx.HTTPError, ValueError):
            return None
        return out if isinstance(out, dict) else None

    def _delete(self, path: str) -> None:
        try:
            self._http.delete(path)
        except httpx.HTTPError:
            pass

    def approvals(self, session_id: str) -> Approvals:
        """The session's pending approval requests and grants (approver token)."""
        what = "the approvals list"
        return Approvals.from_json(self._approver("GET", _approvals_path(session_id), None, what, 200))

    def approve(self, session_id: str, request_id: str, scope: Scope = "once") -> Approved:
        """Approve a pending request once (the identical call) or for the
        session (every call of the tool the rule asks about)."""
        body = {"request_id": request_id, "scope": scope}
        return Approved.from_json(self._approver("POST", _approvals_path(session_id), body, "the approval", 200))

    def revoke(self, session_id: str, approval_id: str) -> None:
        """Revoke a grant or drop a pending request: the call is asked again."""
        self._approver("DELETE", _approvals_path(session_id, approval_id), None, "the revocation", 204)

    def _approver(self, method: str, path: str, body: dict[str, Any] | None, what: str, ok: int) -> Any:
        try:
            resp = self._http.send(_approver_request(self._http, self._approver_token, method, path, body))
        except httpx.HTTPError as exc:
            raise transport_error(exc, what) from exc
        return raise_for(resp, what, ok)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient:
    """An asyncio client of celguard serve (see Client for the arguments)."""

    def __init__(self, url: str | None = None, *, token: str | None = None, token_file: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, uds: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, approver_token: str | None = None,
                 approver_token_file: str | None = None) -> None:
        base, headers = _settings(url, token, token_file)
        self._approver_token = _approver_token(approver_token, approver_token_file)
        if transport is None and uds:
            transport = httpx.AsyncHTTPTransport(uds=uds)
        self._http = httpx.AsyncClient(base_url=base, headers=headers, timeout=timeout, transport=transport,
                                       trust_env=False)

    async def session(self, session_id: str | None = None, *, agent: Agent | None = None, cwd: str | None = None,
                      meta: Mapping[str, Any] | None = None) -> AsyncSession:
        """Create or resume a session (see Client.session)."""
        sid = session_id or uuid.uuid4().hex
        await self._post_json("/v1/sessions", _session_body(sid, agent, meta))
        return AsyncSession(self, sid, agent, cwd)

    async def _decide(self, path: str, body: dict[str, Any], what: str, phase: str, tool: str,
                      call_id: str) -> Decision:
        try:
            resp = await self._http.post(path, json=body)
        except httpx.HTTPError as exc:
            return _failure(exc, what, phase, tool, call_id)
        return _decode(resp, what, phase, tool, call_id)

    async def _post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        try:
            resp = await self._http.post(path, json=body)
            if resp.status_code != 200:
                return None
            out = resp.json()
        except (httpx.HTTPError, ValueError):
            return None
        return out if isinstance(out, dict) else None

    async def _delete(self, path: str) -> None:
        try:
            await self._http.delete(path)
        except httpx.HTTPError:
            pass

    async def approvals(self, session_id: str) -> Approvals:
        """The session's pending approval requests and grants (see Client.approvals)."""
        what = "the approvals list"
        return Approvals.from_json(await self._approver("GET", _approvals_path(session_id), None, what, 200))

    async def approve(self, session_id: str, request_id: str, scope: Scope = "once") -> Approved:
        """Approve a pending request (see Client.approve)."""
        body = {"request_id": request_id, "scope": scope}
        return Approved.from_json(await self._approver("POST", _approvals_path(session_id), body, "the approval",
                                                       200))

    async def revoke(self, session_id: str, approval_id: str) -> None:
        """Revoke a grant or drop a pending request (see Client.revoke)."""
        await self._approver("DELETE", _approvals_path(session_id, approval_id), None, "the revocation", 204)

    async def _approver(self, method: str, path: str, body: dict[str, Any] | None, what: str, ok: int) -> Any:
        try:
            resp = await self._http.send(_approver_request(self._http, self._approver_token, method, path, body))
        except httpx.HTTPError as exc:
            raise transport_error(exc, what) from exc
        return raise_for(resp, what, ok)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
