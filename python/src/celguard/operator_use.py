"""celguard for Operator (operator-use).

The released operator-use (0.2.9, the newest on PyPI) has no Guardrail
class: its extension point is a ``Plugin`` that registers lifecycle hooks on
the Agent (``BEFORE_TOOL_CALL`` may skip a call with a result of its own,
``BEFORE_LLM_CALL`` may change the messages, ``BEFORE_AGENT_END`` the answer;
a tool result whose metadata says ``stop_loop`` ends the turn).
``CelguardPlugin`` is that Plugin, deciding through celguard serve:

* turn start (``BEFORE_AGENT_START``): starts a celguard turn;
* before a tool call: allow runs; warn runs and the warning is appended to
  the tool's result before the model reads it; modify runs with celguard's
  arguments; block, and ask without an approver saying yes, skip the call
  with an error result carrying the reason; halt skips it and ends the turn
  (stop_loop), the answer being the refusal;
* after it: block and ask replace the result the model reads with the
  refusal; modify replaces it with celguard's content; warn appends the
  warning; halt ends the turn;
* the answer (``BEFORE_AGENT_END``): output phase (block/halt replace it
  with the refusal, modify with celguard's text, warn appends the note), then
  celguard's turn end;
* a streamed answer (``Agent.run(..., publish_stream=...)``, how Operator's
  chat channels run): the plugin wraps the Agent's model (``GuardedLLM``,
  done when the Agent registers the plugin, or by ``plugin.attach(agent)``)
  so each text delta reaches ``publish_stream`` only once celguard decided
  it (celguard.AsyncOutputStream): a secret is redacted in flight, a block
  ends the stream with the refusal. The answer so decided is not decided
  again at the end.

Operator logs and swallows a hook's exception and runs the call anyway, so
every handler here catches its own failures and refuses the call instead.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import weakref
from typing import Any, AsyncIterator

from operator_use.agent.hooks import HookEvent, Hooks
from operator_use.agent.hooks.events import (
    AfterToolCallContext,
    BeforeAgentEndContext,
    BeforeAgentStartContext,
    BeforeLLMCallContext,
    BeforeToolCallContext,
)
from operator_use.messages import ToolMessage
from operator_use.plugins import Plugin
from operator_use.providers.events import LLMStreamEvent, LLMStreamEventType
from operator_use.tools import ToolResult

from ._async.client import AsyncClient, AsyncSession
from ._base import SECRET_WINDOW, Agent
from ._common import Approver, approve, refusal_text, warning_text
from ._decision import CODE_ADAPTER_ERROR, Decision

log = logging.getLogger(__name__)

# The Operator session whose model call is about to run (set by the
# BEFORE_LLM_CALL handler, in the task that then calls the model).
_current_session: contextvars.ContextVar[str] = contextvars.ContextVar("celguard_operator_session", default="")


class CelguardPlugin(Plugin):
    """An operator-use Plugin that guards every tool call of the Agent it is
    given to (``Agent(..., plugins=[CelguardPlugin(client)])``).

    One celguard session per Operator session, with the same id. agent names
    the agent to celguard; approver settles ask decisions (without one, ask
    is refused).
    """

    name = "celguard"

    def __init__(self, client: AsyncClient, *, agent: Agent | None = None, approver: Approver | None = None,
                 cwd: str | None = None, holdback: int = SECRET_WINDOW) -> None:
        self.client = client
        self.agent = agent
        self.approver = approver
        self.cwd = cwd
        self.holdback = holdback
        self._sessions: dict[str, AsyncSession] = {}
        self._agents: weakref.WeakSet[Any] = weakref.WeakSet()
        # Per Operator session: the answer decided as it streamed this turn.
        self._streamed: dict[str, str] = {}
        # Per tool call id: what the model must read in place of, or after,
        # the stored result.
        self._replace: dict[str, str] = {}
        self._notes: dict[str, list[str]] = {}
        self._halted: dict[str, Decision] = {}

    def attach(self, agent: Any) -> Any:
        """Wrap agent's model so its streamed answers are decided as they
        stream; returns agent. Done already when the Agent registered the
        plugin (``Agent(..., plugins=[plugin])``)."""
        if not isinstance(agent.llm, GuardedLLM):
            agent.llm = GuardedLLM(agent.llm, self)
        self._agents.add(agent)
        return agent

    def register_hooks(self, hooks: Hooks) -> None:
        """Registers the plugin's handlers (and, called by an Agent's
        constructor, attaches to that Agent)."""
        owner = sys._getframe(1).f_locals.get("self")
        if getattr(owner, "hooks", None) is hooks and hasattr(owner, "llm"):
            self.attach(owner)
        hooks.register(HookEvent.BEFORE_AGENT_START, self._turn_start)
        hooks.register(HookEvent.BEFORE_TOOL_CALL, self._before)
        hooks.register(HookEvent.AFTER_TOOL_CALL, self._after)
        hooks.register(HookEvent.BEFORE_LLM_CALL, self._before_llm)
        hooks.register(HookEvent.BEFORE_AGENT_END, self._turn_end)

    def unregister_hooks(self, hooks: Hooks) -> None:
        """Removes the plugin's handlers."""
        hooks.unregister(HookEvent.BEFORE_AGENT_START, self._turn_start)
        hooks.unregister(HookEvent.BEFORE_TOOL_CALL, self._before)
        hooks.unregister(HookEvent.AFTER_TOOL_CALL, self._after)
        hooks.unregister(HookEvent.BEFORE_LLM_CALL, self._before_llm)
        hooks.unregister(HookEvent.BEFORE_AGENT_END, self._turn_end)

    async def session(self, operator_session_id: str) -> AsyncSession:
        """The celguard session of an Operator session (created once)."""
        s = self._sessions.get(operator_session_id)
        if s is None:
            s = await self.client.session(operator_session_id, agent=self.agent, cwd=self.cwd)
            self._sessions[operator_session_id] = s
        return s

    async def _turn_start(self, ctx: BeforeAgentStartContext) -> None:
        try:
            self._halted.pop(ctx.session.id, None)
            self._streamed.pop(ctx.session.id, None)
            s = await self.session(ctx.session.id)
            await s.start_turn()
        except Exception:
            log.exception("celguard: starting the turn failed; its calls will be decided as the service answers")

    async def _before(self, ctx: BeforeToolCallContext) -> None:
        call = ctx.tool_call
        try:
            s = await self.session(ctx.session.id)
            d = await s.before(call.name, dict(call.params), call_id=call.id)
            if d.verdict == "allow" or (d.verdict == "ask" and await approve(self.approver, d)):
                return
            if d.verdict == "warn":
                self._notes.setdefault(call.id, []).append(warning_text(d))
                return
            if d.verdict == "modify" and d.args is not None:
                call.params = dict(d.args)
                return
        except Exception as exc:  # fail closed: Operator would run the call
            d = Decision.fail_closed(CODE_ADAPTER_ERROR, f"celguard adapter failed: {exc}", phase="before",
                                     tool=call.name, call_id=call.id)
        ctx.skip = True
        meta: dict[str, Any] = {"celguard": dict(d.raw)}
        if d.verdict == "halt":
            meta["stop_loop"] = True
            self._halted[ctx.session.id] = d
        ctx.result = ToolResult.error_result(refusal_text(d), meta)

    async def _after(self, ctx: AfterToolCallContext) -> None:
        call = ctx.tool_call
        if ctx.tool_result.metadata and "celguard" in ctx.tool_result.metadata:
            return  # our own refusal
        try:
            s = await self.session(ctx.session.id)
            content = ctx.content if isinstance(ctx.content, str) else str(ctx.content)
            d = await s.after(call.name, dict(call.params), content, is_error=not ctx.tool_result.success,
                              call_id=call.id)
        except Exception as exc:
            d = Decision.fail_closed(CODE_ADAPTER_ERROR, f"celguard adapter failed: {exc}", phase="after",
                                     tool=call.name, call_id=call.id)
        if d.verdict in ("allow",):
            return
        if d.verdict == "warn":
            self._notes.setdefault(call.id, []).append(warning_text(d))
        elif d.verdict == "modify" and d.content is not None:
            self._replace[call.id] = d.content
        else:
            self._replace[call.id] = refusal_text(d)
            if d.verdict == "halt":
                self._halted[ctx.session.id] = d
                if ctx.tool_result.metadata is None:
                    ctx.tool_result.metadata = {}
                ctx.tool_result.metadata["stop_loop"] = True

    def _rewrite(self, m: Any) -> None:
        if not isinstance(m, ToolMessage):
            return
        text = self._replace.get(m.id)
        notes = self._notes.get(m.id)
        if text is not None:
            m.content = text
        if notes:
            m.content = "\n".join([m.content or "", *notes])

    async def _before_llm(self, ctx: BeforeLLMCallContext) -> None:
        _current_session.set(ctx.session.id)
        for agent in list(self._agents):  # a model swapped after attach is wrapped again
            if not isinstance(agent.llm, GuardedLLM):
                agent.llm = GuardedLLM(agent.llm, self)
        if not self._replace and not self._notes:
            return
        for m in ctx.messages:
            self._rewrite(m)
        for m in ctx.session.messages:
            self._rewrite(m)
        ids = {m.id for m in ctx.session.messages if isinstance(m, ToolMessage)}
        for i in ids:
            self._replace.pop(i, None)
            self._notes.pop(i, None)

    async def _turn_end(self, ctx: BeforeAgentEndContext) -> None:
        sid = ctx.session.id
        halted = self._halted.pop(sid, None)
        streamed = self._streamed.pop(sid, None)
        try:
            s = await self.session(sid)
            if halted is not None:
                ctx.response.content = refusal_text(halted)
            elif streamed is not None and ctx.response.content == streamed:
                pass  # decided as it streamed
            else:
                answer = ctx.response.content
                text = answer if isinstance(answer, str) else json.dumps(answer, default=str)
                d = await s.output(text, None if isinstance(answer, str) else answer)
                if d.verdict == "warn":
                    ctx.response.content = "\n".join([text, warning_text(d)])
                elif d.verdict == "modify" and d.output is not None and isinstance(d.output.get("text"), str):
                    ctx.response.content = d.output["text"]
                elif d.verdict != "allow":
                    ctx.response.content = refusal_text(d)
            await s.end_turn()
        except Exception as exc:
            ctx.response.content = refusal_text(Decision.fail_closed(CODE_ADAPTER_ERROR, f"celguard adapter failed: {exc}"))


class GuardedLLM:
    """An Operator model (BaseChatLLM) whose streamed text celguard decides
    as it streams; everything else is the wrapped model's."""

    def __init__(self, inner: Any, plugin: CelguardPlugin) -> None:
        self.inner = inner
        self._plugin = plugin

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def model_name(self) -> Any:
        """The wrapped model's."""
        return self.inner.model_name

    @property
    def provider(self) -> Any:
        """The wrapped model's."""
        return self.inner.provider

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped model's answer (decided whole at the end of the turn)."""
        return await self.inner.ainvoke(*args, **kwargs)

    async def astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[LLMStreamEvent]:
        """The wrapped model's events, text deltas passed on only as celguard
        decides them."""
        sid = _current_session.get()
        stream = None
        async for ev in self.inner.astream(*args, **kwargs):
            if ev.type == LLMStreamEventType.TEXT_DELTA and ev.content:
                if stream is None:
                    s = await self._plugin.session(sid)
                    stream = s.output_stream(holdback=self._plugin.holdback)
                out = await stream.feed(ev.content)
                if out:
                    yield ev.model_copy(update={"content": out})
                continue
            if ev.type == LLMStreamEventType.TEXT_END and stream is not None:
                rest = await stream.finish()
                if rest:
                    yield LLMStreamEvent(type=LLMStreamEventType.TEXT_DELTA, content=rest)
                # Operator strips the answer before it keeps it.
                self._plugin._streamed[sid] = stream.text.strip() or "(no response)"
            yield ev


__all__ = ["CelguardPlugin", "GuardedLLM"]
