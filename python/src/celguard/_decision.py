"""The Decision model: eval.Decision's JSON (docs/json.md), typed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, cast

Verdict = Literal["allow", "warn", "ask", "modify", "block", "halt"]
Phase = Literal["before", "after", "turn_end", "input", "output", "tools", "resource"]

VERDICTS: frozenset[str] = frozenset({"allow", "warn", "ask", "modify", "block", "halt"})

# Codes the client gives the block decisions it makes itself when it cannot
# get a decision from the service (it fails closed).
CODE_UNAVAILABLE = "service_unavailable"
"""The service could not be reached (connection refused, DNS, TLS, reset)."""
CODE_TIMEOUT = "service_timeout"
"""The service did not answer within the client's timeout."""
CODE_HTTP_ERROR = "service_error"
"""The service answered with a status other than 200."""
CODE_BAD_RESPONSE = "invalid_response"
"""The service answered 200 with a body that is not a Decision."""
CODE_CLIENT_ERROR = "client_error"
"""The client itself failed before it had an answer (for example an
AsyncClient used from an event loop its caller closed, or a transport given
by the caller that raised)."""
CODE_ADAPTER_ERROR = "adapter_error"
"""The adapter failed while applying a decision (for example modified
arguments the tool does not accept)."""


@dataclass(frozen=True)
class Decision:
    """One decision of celguard serve, or a block the client made itself.

    Attributes mirror eval.Decision's JSON. ``raw`` keeps the whole body, so
    fields this version does not name are still available.
    """

    verdict: Verdict
    phase: str = ""
    tool: str = ""
    call_id: str = ""
    reason: str = ""
    code: str = ""
    rule_id: str = ""
    policy: str = ""
    args: dict[str, Any] | None = None
    content: str | None = None
    messages: list[dict[str, Any]] | None = None
    output: dict[str, Any] | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    monitored: bool = False
    client_side: bool = False
    """True when the client made this decision itself (the service was
    unreachable, slow, or answered badly): always a block with a code."""
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def allows_execution(self) -> bool:
        """Whether the call may run: allow, warn and modify do; ask, block
        and halt do not (ask runs only once an approver says yes)."""
        return self.verdict in ("allow", "warn", "modify")

    @property
    def request_id(self) -> str:
        """The approval request an ask recorded (``approval.request_id``):
        the id an approver answers with Client.approve or ``celguard approve
        ID``; "" when the decision names none."""
        ap = self.raw.get("approval")
        rid = ap.get("request_id") if isinstance(ap, dict) else None
        return rid if isinstance(rid, str) else ""

    @property
    def halts(self) -> bool:
        """Whether the decision stops the turn (halt)."""
        return self.verdict == "halt"

    def describe(self) -> str:
        """A one-line account for a model or a person: reason, then code and
        rule in brackets."""
        parts = [self.reason or f"celguard: {self.verdict}"]
        tags = [t for t in (self.code, self.rule_id) if t]
        if tags:
            parts.append("[" + ", ".join(tags) + "]")
        return " ".join(parts)

    @classmethod
    def fail_closed(cls, code: str, reason: str, *, phase: str = "", tool: str = "", call_id: str = "") -> Decision:
        """A block the client makes when it has no decision from the service."""
        return cls(
            verdict="block",
            phase=phase,
            tool=tool,
            call_id=call_id,
            reason=reason,
            code=code,
            client_side=True,
            raw={"verdict": "block", "code": code, "reason": reason},
        )

    @classmethod
    def from_json(cls, body: Any, *, phase: str = "", tool: str = "", call_id: str = "") -> Decision:
        """Parse a Decision body; anything malformed is a client-side block."""
        if not isinstance(body, dict):
            return cls.fail_closed(CODE_BAD_RESPONSE, "celguard answered with a body that is not a JSON object",
                                   phase=phase, tool=tool, call_id=call_id)
        b = cast(dict[str, Any], body)
        verdict = b.get("verdict")
        if not isinstance(verdict, str) or verdict not in VERDICTS:
            return cls.fail_closed(CODE_BAD_RESPONSE, f"celguard answered with an unknown verdict {verdict!r}",
                                   phase=phase, tool=tool, call_id=call_id)
        args = b.get("args")
        content = b.get("content")
        messages = b.get("messages")
        output = b.get("output")
        metadata = b.get("metadata")
        if verdict == "modify" and args is None and content is None and messages is None and output is None:
            return cls.fail_closed(CODE_BAD_RESPONSE, "celguard answered modify without the rewritten value",
                                   phase=phase, tool=tool, call_id=call_id)
        if (args is not None and not isinstance(args, dict)) or (content is not None and not isinstance(content, str)) \
                or (messages is not None and not isinstance(messages, list)) \
                or (output is not None and not isinstance(output, dict)):
            return cls.fail_closed(CODE_BAD_RESPONSE, "celguard answered with a malformed rewritten value",
                                   phase=phase, tool=tool, call_id=call_id)
        return cls(
            verdict=cast(Verdict, verdict),
            phase=_str(b.get("phase")) or phase,
            tool=_str(b.get("tool")) or tool,
            call_id=_str(b.get("call_id")) or call_id,
            reason=_str(b.get("reason")),
            code=_str(b.get("code")),
            rule_id=_str(b.get("rule_id")),
            policy=_str(b.get("policy")),
            args=cast("dict[str, Any] | None", args),
            content=content,
            messages=cast("list[dict[str, Any]] | None", messages),
            output=cast("dict[str, Any] | None", output),
            metadata={str(k): str(v) for k, v in cast(dict[str, Any], metadata).items()}
            if isinstance(metadata, dict) else {},
            monitored=b.get("monitored") is True,
            raw=b,
        )


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""
