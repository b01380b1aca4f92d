"""celguard for the OpenAI Agents SDK (openai-agents).

``CelguardGuards(session)`` gives the SDK's own guardrail objects, backed by
celguard's phases:

* ``guard(tool)``: a copy of a FunctionTool with tool input and output
  guardrails of its own attached first and its ``on_invoke_tool`` wrapped,
  so a modify's arguments are the ones the tool receives and a warn reaches
  the model with the tool's output. What the guardrail decided is kept per
  guarded tool (its identity, not its name) and call id, and the wrapped
  invoker runs a call only with what its own guardrail decided for that call
  id and those exact arguments: anything else is refused.
* ``tool_input_guardrail`` (before), ``tool_output_guardrail`` (after): the
  bare SDK objects for any FunctionTool. They cannot change a tool's
  arguments, so a modify is refused there (reject_content naming the
  arguments celguard accepts).
* ``input_guardrail`` (input phase) and ``output_guardrail`` (output phase):
  an InputGuardrail (blocking: it runs before the model) and an
  OutputGuardrail for an Agent.
* ``model(model)``: the Agent's Model, with a streamed answer decided as it
  streams (``Runner.run_streamed``): text is released only once celguard
  decided it, a secret is redacted in flight, a block ends the text with the
  refusal. ``agent_hooks`` (``Agent(hooks=...)``) refuses a streamed run of an
  agent whose model is not wrapped, before the model is called.

Turns follow the SDK's runs: every callback knows its run (the run's Usage
object, shared by everything in one Runner.run), and the first of a new run
ends the previous run's turn and starts one; the output guardrail (or
``agent_hooks.on_end``) ends it when the run gives its final output. So a
halt holds for the rest of its run and not after.

Verdicts (table in docs/python.md): tool guardrails: allow runs; warn runs
and the model reads the warning after the output (through guard()); modify
runs with celguard's arguments (guard()); block and an unapproved ask reject
the call with the reason as the model's tool output (reject_content), the
tool never runs; halt raises the SDK's tripwire exception, ending the run.
Agent guardrails can only trip or not: block, halt, an unapproved ask and a
modify (no rewrite exists there) trip; allow and warn pass (warn is in
output_info).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any, AsyncIterator

from agents import (
    Agent as SDKAgent,
    AgentHooks,
    FunctionTool,
    GuardrailFunctionOutput,
    InputGuardrail,
    Model,
    OutputGuardrail,
    RunContextWrapper,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
    UserError,
)
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.tool_context import ToolContext
from openai.types.responses import ResponseTextDeltaEvent

from ._async.client import AsyncOutputStream, AsyncSession
from ._base import SECRET_WINDOW, Agent
from ._common import Approver, approve, refusal_text, warning_text
from ._decision import CODE_ADAPTER_ERROR, Decision


class UnguardedStream(UserError):
    """A streamed run of an agent whose model celguard does not wrap: its
    answer would reach the user before celguard decided it."""


class _Key:
    """The identity of one guard() call (or of the bare guardrails)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<celguard tool {self.name!r} at {id(self):#x}>"


_MISSING: Any = object()


class CelguardGuards:
    """The SDK guardrails for one celguard session.

    approver settles ask decisions; without one an ask is refused. holdback
    is how much of a streamed answer waits for celguard (default
    SECRET_WINDOW). Use one CelguardGuards per concurrent run.
    """

    def __init__(self, session: AsyncSession, *, approver: Approver | None = None,
                 holdback: int = SECRET_WINDOW) -> None:
        self.session = session
        self.approver = approver
        self.holdback = holdback
        # Per (guarded tool, call id): the decided raw arguments and what to
        # run with (None: as the model sent them); warnings for the output.
        self._decided: dict[tuple[_Key, str], tuple[str, dict[str, Any] | None]] = {}
        self._notes: dict[tuple[_Key, str], list[str]] = {}
        self._bare = _Key("(bare guardrail)")
        self._run: object | None = None
        self._turn_open = False
        self._turn_lock = asyncio.Lock()
        self._streamed: set[str] = set()
        self.tool_input_guardrail: ToolInputGuardrail[Any] = self._input_for(self._bare, False)
        self.tool_output_guardrail: ToolOutputGuardrail[Any] = self._output_for(self._bare)
        self.input_guardrail: InputGuardrail[Any] = InputGuardrail(
            guardrail_function=self._input, name="celguard_input", run_in_parallel=False)
        self.output_guardrail: OutputGuardrail[Any] = OutputGuardrail(
            guardrail_function=self._output, name="celguard_output")
        self.agent_hooks: AgentHooks[Any] = _Hooks(self)

    # -- tools -----------------------------------------------------------

    def guard(self, tool: FunctionTool) -> FunctionTool:
        """A copy of tool with celguard's tool guardrails first and its
        invoker wrapped to run only what they decided."""
        key = _Key(tool.name)
        inner = tool.on_invoke_tool
        guards = self

        async def invoke(ctx: ToolContext[Any], raw: str) -> Any:
            decided, args = guards._decided.pop((key, ctx.tool_call_id), (_MISSING, None))
            if decided is _MISSING or decided != raw:
                # The guardrail did not run for this call, or decided other
                # arguments: fail closed.
                d = Decision.fail_closed(CODE_ADAPTER_ERROR, "celguard did not decide this call with these arguments",
                                         phase="before", tool=ctx.tool_name, call_id=ctx.tool_call_id)
                return refusal_text(d)
            return await inner(ctx, json.dumps(args) if args is not None else raw)

        return dataclasses.replace(
            tool,
            on_invoke_tool=invoke,
            tool_input_guardrails=[self._input_for(key, True), *(tool.tool_input_guardrails or [])],
            tool_output_guardrails=[self._output_for(key), *(tool.tool_output_guardrails or [])],
        )

    def _input_for(self, key: _Key, applies: bool) -> ToolInputGuardrail[Any]:
        async def before(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
            return await self._before(data, key, applies)

        return ToolInputGuardrail(guardrail_function=before, name="celguard_before")

    def _output_for(self, key: _Key) -> ToolOutputGuardrail[Any]:
        async def after(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
            return await self._after(data, key)

        return ToolOutputGuardrail(guardrail_function=after, name="celguard_after")

    def _agent(self, agent: Any) -> Agent | None:
        name = getattr(agent, "name", None)
        if not isinstance(name, str) or not name:
            return self.session.agent
        ids = self.session.agent.ids if self.session.agent is not None else None
        return Agent(name=name, ids=ids)

    async def _before(self, data: ToolInputGuardrailData, key: _Key, applies: bool) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        await self._enter_run(ctx)
        args = _parse_args(ctx.tool_arguments)
        if args is None:
            d = Decision.fail_closed("invalid_input", "tool arguments are not a JSON object",
                                     phase="before", tool=ctx.tool_name)
        else:
            d = await self.session.before(ctx.tool_name, args, call_id=ctx.tool_call_id, agent=self._agent(data.agent))
        info = dict(d.raw)
        slot = (key, ctx.tool_call_id)
        if d.verdict == "allow" or (d.verdict == "ask" and await approve(self.approver, d)):
            self._decided[slot] = (ctx.tool_arguments, None)
            return ToolGuardrailFunctionOutput.allow(info)
        if d.verdict == "warn":
            self._decided[slot] = (ctx.tool_arguments, None)
            self._notes.setdefault(slot, []).append(warning_text(d))
            return ToolGuardrailFunctionOutput.allow(info)
        if d.verdict == "modify" and d.args is not None:
            if applies:
                self._decided[slot] = (ctx.tool_arguments, dict(d.args))
                return ToolGuardrailFunctionOutput.allow(info)
            # A bare guardrail cannot change the arguments: refuse the call.
            return ToolGuardrailFunctionOutput.reject_content(
                f"[celguard would run this call only as {json.dumps(d.args)}] {d.describe()}", info)
        if d.verdict == "halt":
            return ToolGuardrailFunctionOutput.raise_exception(info)
        return ToolGuardrailFunctionOutput.reject_content(refusal_text(d), info)

    async def _after(self, data: ToolOutputGuardrailData, key: _Key) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        await self._enter_run(ctx)
        notes = self._notes.pop((key, ctx.tool_call_id), [])
        args = _parse_args(ctx.tool_arguments) or {}
        text = data.output if isinstance(data.output, str) else str(data.output)
        d = await self.session.after(ctx.tool_name, args, text, call_id=ctx.tool_call_id,
                                     agent=self._agent(data.agent))
        info = dict(d.raw)
        if d.verdict == "halt":
            return ToolGuardrailFunctionOutput.raise_exception(info)
        if d.verdict in ("block", "ask"):
            return ToolGuardrailFunctionOutput.reject_content(refusal_text(d), info)
        if d.verdict == "modify" and d.content is not None:
            text = d.content
        elif d.verdict == "warn":
            notes.append(warning_text(d))
        elif not notes:
            return ToolGuardrailFunctionOutput.allow(info)
        # reject_content is the SDK's only way to change what the model reads.
        return ToolGuardrailFunctionOutput.reject_content("\n".join([text, *notes]), info)

    # -- the model's input and output --------------------------------------

    async def _input(self, ctx: RunContextWrapper[Any], agent: SDKAgent[Any],
                     items: str | list[TResponseInputItem]) -> GuardrailFunctionOutput:
        await self._enter_run(ctx)
        d = await self.session.input(_messages(items), agent=self._agent(agent))
        return _trip(d)

    async def _output(self, ctx: RunContextWrapper[Any], agent: SDKAgent[Any], output: Any) -> GuardrailFunctionOutput:
        await self._enter_run(ctx)
        text = output if isinstance(output, str) else json.dumps(output, default=str)
        if text in self._streamed:
            # celguard decided this answer as it streamed (model()).
            self._streamed.discard(text)
            out = GuardrailFunctionOutput(output_info={"verdict": "allow", "streamed": True}, tripwire_triggered=False)
        else:
            out = _trip(await self.session.output(text, None if isinstance(output, str) else output,
                                                  agent=self._agent(agent)))
        await self._end_run()
        return out

    def model(self, model: Model) -> Model:
        """model with its streamed answers decided as they stream."""
        if isinstance(model, CelguardModel):
            return model
        return CelguardModel(model, self)

    # -- turns -------------------------------------------------------------

    async def _enter_run(self, ctx: RunContextWrapper[Any]) -> None:
        """Start a turn at the first callback of a new run (ending the
        previous run's turn if its end was not seen)."""
        run = ctx.usage
        if self._run is run:
            return
        async with self._turn_lock:
            if self._run is run:
                return
            if self._turn_open:
                await self.session.end_turn()
            self._streamed.clear()
            self._run = run
            await self.session.start_turn()
            self._turn_open = True

    async def _end_run(self) -> None:
        async with self._turn_lock:
            if self._turn_open:
                self._turn_open = False
                await self.session.end_turn()


class _Hooks(AgentHooks[Any]):
    """Agent hooks: the run boundary, and no streamed run of an unwrapped
    model."""

    def __init__(self, guards: CelguardGuards) -> None:
        self._guards = guards

    async def on_start(self, context: Any, agent: Any) -> None:
        """A run reaches this agent: start its turn."""
        await self._guards._enter_run(context)

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        """Refuse a streamed run whose model celguard does not wrap."""
        if not isinstance(getattr(agent, "model", None), CelguardModel) and _streamed_run(context.usage):
            raise UnguardedStream(
                f"celguard: agent {getattr(agent, 'name', '')!r} runs streamed (Runner.run_streamed) with a model "
                "celguard does not wrap, so its answer would reach the user before celguard decides it; give the "
                "agent model=guards.model(...)")

    async def on_end(self, context: Any, agent: Any, output: Any) -> None:
        """The run's final output: end its turn."""
        await self._guards._end_run()


def _streamed_run(usage: object) -> bool:
    """Whether the run whose Usage is usage is a streamed one:
    Runner.run_streamed runs the SDK's start_streaming coroutine in a task of
    its own, with the run's context wrapper as an argument."""
    for task in asyncio.all_tasks():
        coro: Any = task.get_coro()
        for _ in range(64):  # the chain of awaits from the task down
            if coro is None:
                break
            frame = getattr(coro, "cr_frame", None)
            if getattr(getattr(coro, "cr_code", None), "co_name", "") == "start_streaming" and frame is not None:
                wrapper = frame.f_locals.get("context_wrapper")
                if getattr(wrapper, "usage", None) is usage:
                    return True
                break
            coro = getattr(coro, "cr_await", None)
    return False


class CelguardModel(Model):
    """A Model whose streamed answers celguard decides as they stream (make
    one with CelguardGuards.model). get_response is the wrapped model's: the
    output guardrail decides a whole answer."""

    def __init__(self, inner: Model, guards: CelguardGuards) -> None:
        self.inner = inner
        self.guards = guards

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        """The wrapped model's response."""
        return await self.inner.get_response(*args, **kwargs)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        """The wrapped model's events, text deltas decided before they pass
        and the full texts of the closing events replaced by what was
        released."""
        streams: dict[tuple[str, int], AsyncOutputStream] = {}

        def stream(item_id: str, index: int) -> AsyncOutputStream:
            st = streams.get((item_id, index))
            if st is None:
                st = self.guards.session.output_stream(holdback=self.guards.holdback)
                streams[(item_id, index)] = st
            return st

        async for ev in self.inner.stream_response(*args, **kwargs):
            kind = getattr(ev, "type", "")
            if isinstance(ev, ResponseTextDeltaEvent):
                out = await stream(ev.item_id, ev.content_index).feed(ev.delta)
                if out:
                    yield ev.model_copy(update={"delta": out})
                continue
            if kind in ("response.output_text.done", "response.content_part.done", "response.output_item.done",
                        "response.completed"):
                for (item_id, index), st in list(streams.items()):
                    rest = await st.finish()
                    if rest:
                        yield ResponseTextDeltaEvent(type="response.output_text.delta", item_id=item_id,
                                                     output_index=getattr(ev, "output_index", 0),
                                                     content_index=index, delta=rest, logprobs=[],
                                                     sequence_number=getattr(ev, "sequence_number", 0))
                    if st.original:
                        self.guards._streamed.add(st.text)
                _replace_texts(ev, streams)
            yield ev


def _replace_texts(ev: Any, streams: dict[tuple[str, int], AsyncOutputStream]) -> None:
    """Put what was released in place of the model's text in a closing event."""
    if getattr(ev, "type", "") == "response.output_text.done":
        st = streams.get((ev.item_id, ev.content_index))
        if st is not None:
            ev.text = st.text
        return
    part = getattr(ev, "part", None)
    if part is not None and getattr(part, "type", "") == "output_text":
        st = streams.get((ev.item_id, ev.content_index))
        if st is not None:
            part.text = st.text
    items = [ev.item] if getattr(ev, "item", None) is not None else []
    response = getattr(ev, "response", None)
    if response is not None:
        items.extend(getattr(response, "output", None) or [])
    for item in items:
        if getattr(item, "type", "") != "message":
            continue
        for i, c in enumerate(getattr(item, "content", None) or []):
            st = streams.get((item.id, i))
            if st is not None and getattr(c, "type", "") == "output_text":
                c.text = st.text


def _trip(d: Decision) -> GuardrailFunctionOutput:
    """An agent guardrail can only trip: everything but allow and warn does
    (a modify too, since the SDK has no rewrite there; input and output rules
    cannot ask)."""
    return GuardrailFunctionOutput(output_info=dict(d.raw), tripwire_triggered=d.verdict not in ("allow", "warn"))


def _parse_args(raw: str) -> dict[str, Any] | None:
    try:
        v = json.loads(raw or "{}")
    except ValueError:
        return None
    return v if isinstance(v, dict) else None


def _messages(items: str | list[TResponseInputItem]) -> list[dict[str, Any]]:
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    out: list[dict[str, Any]] = []
    for it in items:
        item: dict[str, Any] = dict(it) if isinstance(it, dict) else {}
        role = str(item.get("role") or item.get("type") or "")
        content = item.get("content", item.get("output", ""))
        if isinstance(content, list):
            content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        out.append({"role": role, "content": content if isinstance(content, str) else json.dumps(content, default=str)})
    return out


__all__ = ["CelguardGuards", "CelguardModel", "UnguardedStream"]
