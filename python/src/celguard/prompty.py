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
* a streamed answer (a .prompty whose model options say ``stream: true``):
  Prompty hands its tokens to ``on_event``; the callback
  ``guardrails.on_event(cb)`` passes a token on to cb only once celguard
  decided it (celguard.OutputStream): a secret is redacted in flight, a
  block ends the tokens with the refusal and then denies the answer. A turn
  given a callback of its own (not wrapped) is refused before the model is
  called, since its tokens would reach it undecided.

Turns: a run is one ``prompty.turn``; ``guardrails.turn(prompt, inputs,
...)`` starts a celguard turn, runs prompty.turn with these guardrails and
the wrapped on_event, and ends the turn. Called directly,
``prompty.turn(..., guardrails=guardrails)`` is recognised too: each turn
sends its own message list to the input guardrail, so the first input check
of a new list ends the previous turn and starts one.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Literal

import prompty
from prompty import GuardrailError, GuardrailResult, Guardrails, Message, TextPart

from ._base import SECRET_WINDOW
from ._common import SyncApprover, approve_sync, refusal_text, warning_text
from ._decision import Decision
from ._sync.client import OutputStream, Session

EventCallback = Callable[[str, dict[str, Any]], None]
"""Prompty's on_event callback: (event type, data)."""


class GuardedEvents:
    """An on_event callback passing Prompty's events on to cb, tokens only as
    celguard decides them (make one with CelguardGuardrails.on_event)."""

    def __init__(self, guardrails: CelguardGuardrails, cb: EventCallback | None) -> None:
        self._guardrails = guardrails
        self.cb = cb

    def __call__(self, event_type: str, data: dict[str, Any]) -> None:
        g = self._guardrails
        if event_type == "token":
            if g._stream is None:
                g._stream = g.session.output_stream(holdback=g.holdback)
            g._sink = self
            out = g._stream.feed(str((data or {}).get("token", "")))
            if out:
                self._pass("token", {"token": out})
            return
        if event_type == "turn_end" and (data or {}).get("status") != "success":
            # A failed turn's end carries the answer a guardrail refused.
            data = _without_response(data or {})
        self._pass(event_type, data)

    def _pass(self, event_type: str, data: dict[str, Any]) -> None:
        if self.cb is not None:
            self.cb(event_type, data)


class CelguardGuardrails(Guardrails):
    """Prompty Guardrails deciding through one celguard session.

    Pass it as ``guardrails=`` to prompty.turn / turn_async. approver settles
    ask decisions (a plain function); without one an ask is denied.
    """

    def __init__(self, session: Session, *, approver: SyncApprover | None = None,
                 holdback: int = SECRET_WINDOW) -> None:
        super().__init__(input=self._input, output=self._output, tool=self._tool)
        self.session = session
        self.approver = approver
        self.holdback = holdback
        self.warnings: list[str] = []
        """Every warning celguard gave in this session, in order."""
        self._pending: list[str] = []
        self._run: list[object] = []  # the message lists of the current run
        self._turn_open = False
        self._stream: OutputStream | None = None
        self._sink: GuardedEvents | None = None

    def turn(self, prompt: Any, inputs: dict[str, Any] | None = None, *, on_event: EventCallback | None = None,
             **kwargs: Any) -> Any:
        """prompty.turn with these guardrails, in a celguard turn of its own,
        on_event wrapped (see on_event)."""
        self._end_run()
        self._begin_run()
        try:
            return prompty.turn(prompt, inputs, guardrails=self, on_event=self.on_event(on_event), **kwargs)
        finally:
            self._end_run()

    def on_event(self, cb: EventCallback | None = None) -> GuardedEvents:
        """An on_event callback for prompty.turn passing events on to cb and
        streamed tokens only once celguard decided them."""
        return GuardedEvents(self, cb)

    def _begin_run(self) -> None:
        self.session.start_turn()
        self._turn_open = True
        self._stream = None

    def _end_run(self) -> None:
        self._run = []
        if self._turn_open:
            self._turn_open = False
            self.session.end_turn()

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
        if not any(messages is m for m in self._run):
            # A message list not seen before: a new prompty.turn.
            if self._run or not self._turn_open:
                self._end_run()
                self._begin_run()
            self._run.append(messages)
        foreign = _foreign_callback()
        if foreign:
            return GuardrailResult(allowed=False, reason=(
                "[celguard refused this turn] its on_event callback is not wrapped, so streamed tokens would reach "
                "it before celguard decides them: pass on_event=guardrails.on_event(callback) [unguarded_stream]"))
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
        if out is not None:
            self._run.append(out)  # Prompty goes on with the rewrite
        return GuardrailResult(allowed=True, rewrite=out)

    def _output(self, message: Message) -> GuardrailResult:
        if self._stream is not None:
            return self._streamed(message)
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


    def _streamed(self, message: Message) -> GuardrailResult:
        """The answer decided as it streamed: release the rest, then the
        stream's decision is the guardrail's."""
        st, sink = self._stream, self._sink
        self._stream = self._sink = None
        assert st is not None
        rest = st.finish()
        if rest and sink is not None:
            sink._pass("token", {"token": rest})
        d = st.decision
        if d is not None:
            self._warn(d)
        if d is None or (st.stopped and d.verdict != "modify"):
            return GuardrailResult(allowed=False, reason=refusal_text(d) if d is not None else "celguard: no decision")
        if st.text != _text(message):
            return GuardrailResult(allowed=True, rewrite=st.text)
        return GuardrailResult(allowed=True)


def _without_response(data: dict[str, Any]) -> dict[str, Any]:
    """data without its "response" entries, at any depth."""
    out: dict[str, Any] = {}
    for k, v in data.items():
        if k == "response":
            continue
        out[k] = _without_response(v) if isinstance(v, dict) else v
    return out


def _foreign_callback() -> bool:
    """Whether the prompty.turn calling the input guardrail streams its
    tokens to an on_event callback celguard does not wrap."""
    f = sys._getframe(1)
    for _ in range(8):
        if f is None:
            return False
        if f.f_globals.get("__name__") == "prompty.core.pipeline" and f.f_code.co_name in ("turn", "turn_async"):
            cb = f.f_locals.get("on_event")
            return cb is not None and not isinstance(cb, GuardedEvents)
        f = f.f_back  # type: ignore[assignment]
    return False


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


__all__ = ["CelguardGuardrails", "EventCallback", "GuardedEvents"]
