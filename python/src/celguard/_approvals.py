"""Typed results and the error of the approval routes of celguard serve
(``/v1/sessions/{id}/approvals``, docs/serve.md).

Approving is not a decision: the approval methods raise ApprovalError on any
answer other than success instead of failing closed to a block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, cast

import httpx

Scope = Literal["once", "session"]
"""What an approval over HTTP covers: the exact call once, or every call of
the tool the rule asks about for the rest of the session. (``always`` is
refused by the server: run ``celguard approve ID --always`` instead.)"""

CODE_APPROVER_UNAVAILABLE = "service_unavailable"
"""ApprovalError.code when the service could not be reached or timed out."""
CODE_APPROVER_BAD_RESPONSE = "invalid_response"
"""ApprovalError.code when the service answered with a body that is not what
the route returns."""


class ApprovalError(Exception):
    """An approval route did not succeed. ``code`` is the server's error code
    (``unauthorized``, ``forbidden``, ``approvals_disabled``, ``no_such_request``,
    ``always_refused``, ``mandatory_rule``, ``store_unavailable``,
    ``invalid_input``, ...), or ``service_unavailable`` / ``invalid_response``
    when the client got no usable answer; ``status`` is the HTTP status (0
    when there was none)."""

    def __init__(self, code: str, message: str, status: int = 0) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message
        self.status = status


@dataclass(frozen=True)
class ApprovalRequest:
    """An ask recorded for a person to answer, bound to the exact call."""

    id: str
    rule_id: str
    tool: str
    digest: str
    summary: str
    created: str
    policy: str = ""
    mandatory: bool = False
    reason: str = ""
    args: dict[str, Any] | None = None
    args_omitted: bool = False
    cwd: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: Any) -> ApprovalRequest:
        """Parse an ApprovalRequest object; raises ApprovalError if malformed."""
        b = _object(body, "request")
        args = b.get("args")
        return cls(
            id=_req(b, "id"), rule_id=_req(b, "rule_id"), tool=_req(b, "tool"), digest=_req(b, "digest"),
            summary=_req(b, "summary"), created=_req(b, "created"), policy=_opt(b, "policy"),
            mandatory=b.get("mandatory") is True, reason=_opt(b, "reason"),
            args=cast(dict[str, Any], args) if isinstance(args, dict) else None,
            args_omitted=b.get("args_omitted") is True, cwd=_opt(b, "cwd"), raw=b,
        )


@dataclass(frozen=True)
class Grant:
    """An approval a person gave. ``id`` is the request it answered."""

    id: str
    scope: str
    subject: str
    rule_id: str
    tool: str
    at: str
    digest: str = ""
    summary: str = ""
    by: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: Any) -> Grant:
        """Parse a Grant object; raises ApprovalError if malformed."""
        b = _object(body, "grant")
        return cls(
            id=_req(b, "id"), scope=_req(b, "scope"), subject=_req(b, "subject"), rule_id=_req(b, "rule_id"),
            tool=_req(b, "tool"), at=_req(b, "at"), digest=_opt(b, "digest"), summary=_opt(b, "summary"),
            by=_opt(b, "by"), raw=b,
        )


@dataclass(frozen=True)
class Approvals:
    """A session's pending requests and grants (GET .../approvals)."""

    session_id: str
    requests: list[ApprovalRequest]
    grants: list[Grant]

    @classmethod
    def from_json(cls, body: Any) -> Approvals:
        """Parse an Approvals body; raises ApprovalError if malformed."""
        b = _object(body, "approvals")
        reqs, grants = b.get("requests"), b.get("grants")
        if not isinstance(reqs, list) or not isinstance(grants, list):
            raise ApprovalError(CODE_APPROVER_BAD_RESPONSE, "approvals without requests or grants lists")
        return cls(session_id=_req(b, "session_id"),
                   requests=[ApprovalRequest.from_json(r) for r in reqs],
                   grants=[Grant.from_json(g) for g in grants])


@dataclass(frozen=True)
class Approved:
    """What POST .../approvals recorded: the grant and the request it answered."""

    grant: Grant
    request: ApprovalRequest

    @classmethod
    def from_json(cls, body: Any) -> Approved:
        """Parse an Approved body; raises ApprovalError if malformed."""
        b = _object(body, "approved")
        return cls(grant=Grant.from_json(b.get("grant")), request=ApprovalRequest.from_json(b.get("request")))


@dataclass(frozen=True)
class Denial:
    """A person's refusal of a pending request: the exact call is refused for
    the rest of the session with ``note``, and asks no more. ``id`` is the
    request it answered."""

    id: str
    rule_id: str
    tool: str
    digest: str
    at: str
    summary: str = ""
    note: str = ""
    by: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: Any) -> Denial:
        """Parse a Denial object; raises ApprovalError if malformed."""
        b = _object(body, "denial")
        return cls(
            id=_req(b, "id"), rule_id=_req(b, "rule_id"), tool=_req(b, "tool"), digest=_req(b, "digest"),
            at=_req(b, "at"), summary=_opt(b, "summary"), note=_opt(b, "note"), by=_opt(b, "by"), raw=b,
        )


@dataclass(frozen=True)
class Denied:
    """What POST .../denials recorded: the denial and the request it answered."""

    denial: Denial
    request: ApprovalRequest

    @classmethod
    def from_json(cls, body: Any) -> Denied:
        """Parse a Denied body; raises ApprovalError if malformed."""
        b = _object(body, "denied")
        return cls(denial=Denial.from_json(b.get("denial")), request=ApprovalRequest.from_json(b.get("request")))


def raise_for(resp: httpx.Response, what: str, ok: int = 200) -> Any:
    """The JSON body of a successful answer (None for 204), else ApprovalError
    with the server's code."""
    if resp.status_code == ok:
        if ok == 204:
            return None
        try:
            return resp.json()
        except ValueError:
            raise ApprovalError(CODE_APPROVER_BAD_RESPONSE, f"celguard answered {what} with a body that is not JSON",
                                resp.status_code) from None
    code, message = f"http_{resp.status_code}", ""
    try:
        body = resp.json()
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict):
            code = str(err.get("code") or code)
            message = str(err.get("message") or "")
    except ValueError:
        pass
    raise ApprovalError(code, message or f"celguard answered {what} with HTTP {resp.status_code}", resp.status_code)


def transport_error(exc: httpx.HTTPError, what: str) -> ApprovalError:
    """The ApprovalError for a request that got no answer."""
    return ApprovalError(CODE_APPROVER_UNAVAILABLE, f"celguard could not be reached for {what}: {exc}")


def _object(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApprovalError(CODE_APPROVER_BAD_RESPONSE, f"celguard answered with a {what} that is not a JSON object")
    return cast(dict[str, Any], body)


def _req(b: Mapping[str, Any], key: str) -> str:
    v = b.get(key)
    if not isinstance(v, str):
        raise ApprovalError(CODE_APPROVER_BAD_RESPONSE, f"celguard answered without a string {key!r}")
    return v


def _opt(b: Mapping[str, Any], key: str) -> str:
    v = b.get(key)
    return v if isinstance(v, str) else ""
