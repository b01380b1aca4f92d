"""celguard for Prompty (prompty): ``Guardrails(input=, output=, tool=)``
backed by celguard's input, output and before phases.

Prompty calls its guardrails synchronously, so this adapter uses the sync
client. Verdicts (table in docs/python.md):

* tool (before): allow runs; modify runs with celguard's arguments (Prompty's
  rewrite); warn runs, and the warning reaches the model as a system note the
  input guardrail adds before the next model call; block and an unapproved
  ask deny (the model reads "Tool denied by guardrail: reason"); halt raises
  Prompty's GuardrailError, which ends the turn.
* input: allow passes (with pending warnings added); modify rewrites the
  message list; warn passes with the warning added as a system note; block,
  halt and an unapproved ask deny (Prompty raises GuardrailError).
* output: allow passes; modify rewrites the answer; warn passes (the answer
  is final, the model reads nothing more; the warning is kept in
  ``warnings``); block, halt and an unapproved ask deny.
"""

from __future__ import annotations

from typing import Any, Literal

from prompty import GuardrailError, GuardrailResult, Guardrails, Message, TextPart

from ._sync.client import Session
from ._common import SyncApprover, approve_sync, refusal_text, warning_text
from ._decision import Decision


class CelguardGuardrails(Guardrails):
    """Prompty Guardrails deciding through one celguard session.

    Pass it as ``guardrails=`` to prompty.turn / turn_async. approver settles
    ask decisions (a plain function); without one an ask is denied.
    """

    def __init__(self, session: Session, *, approver: SyncApprover | None = None) -> None:
        super().__init__(input=self._input, output=self._output, tool=self._tool)
        self.session = session
        self.approver = approver
        self.warnings: list[str] = []
        """Every warning celguard gave in this session, in order."""
        self._pending: list[str] = []

    def _allowed(self, d: Decision) -> bool:
        return d.verdict in ("allow", "warn", "modify") or (d.verdict == "ask" and approve_sync(self.approver, d))

    def _warn(self, d: Decision) -> None:
        if d.verdict == "warn":
            note = warning_text(d)
            self.warnings.append(note)
            self._pending.append(note)

    def _tool(self, name: str, arguments: dict[str, Any]) -> GuardrailResult:
        d = self.session.before(name, arguments)
        if d.verdict == "halt":
            raise GuardrailError(refusal_text(d))
        if not self._allowed(d):
            return GuardrailResult(allowed=False, reason=refusal_text(d))
        self._warn(d)
        if d.verdict == "modify" and d.args is not None:
            return GuardrailResult(allowed=True, rewrite=d.args)
        if d.verdict == "modify":
            return GuardrailResult(allowed=False, reason=refusal_text(d))
        return GuardrailResult(allowed=True)

    def _input(self, messages: list[Message]) -> GuardrailResult:
        d = self.session.input([_as_json(m) for m in messages])
        if not self._allowed(d):
            return GuardrailResult(allowed=False, reason=refusal_text(d))
        self._warn(d)
        out: list[Message] | None = None
        if d.verdict == "modify":
            if d.messages is None:
                return GuardrailResult(allowed=False, reason=refusal_text(d))
            out = _rewrite(messages, d.messages)
        if self._pending:
            out = list(out if out is not None else messages)
            out.append(Message(role="system", parts=[TextPart(value="\n".join(self._pending))]))
            self._pending.clear()
        return GuardrailResult(allowed=True, rewrite=out)

    def _output(self, message: Message) -> GuardrailResult:
        d = self.session.output(_text(message))
        if not self._allowed(d):
            return GuardrailResult(allowed=False, reason=refusal_text(d))
        self._warn(d)
        if d.verdict == "modify":
            text = d.output.get("text") if d.output is not None else None
            if not isinstance(text, str):
                return GuardrailResult(allowed=False, reason=refusal_text(d))
            return GuardrailResult(allowed=True, rewrite=text)
        return GuardrailResult(allowed=True)


def _text(m: Message) -> str:
    return "".join(p.value for p in m.parts if isinstance(p, TextPart))


def _as_json(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": _text(m)}
    name = m.metadata.get("name") if m.metadata else None
    if isinstance(name, str):
        out["name"] = name
    return out


Role = Literal["system", "user", "assistant", "developer", "tool"]
_ROLES: dict[str, Role] = {r: r for r in ("system", "user", "assistant", "developer", "tool")}


def _rewrite(old: list[Message], new: list[dict[str, Any]]) -> list[Message]:
    """celguard's message list as Prompty messages. A message at the same
    place and with the same role as before keeps its metadata (tool call
    ids) and parts other than text, so the conversation stays well formed."""
    out: list[Message] = []
    for i, m in enumerate(new):
        role = _ROLES.get(str(m.get("role")), "user")
        msg = Message(role=role, parts=[TextPart(value=str(m.get("content") or ""))])
        if i < len(old) and old[i].role == role:
            msg.metadata = dict(old[i].metadata)
            msg.parts.extend(p for p in old[i].parts if not isinstance(p, TextPart))
        if isinstance(m.get("name"), str) and m["name"]:
            msg.metadata["name"] = m["name"]
        out.append(msg)
    return out


__all__ = ["CelguardGuardrails"]
