"""celguard for the OpenAI Agents SDK (openai-agents).

``CelguardGuards(session)`` gives the SDK's own guardrail objects, backed by
celguard's phases:

* ``tool_input_guardrail`` (before), ``tool_output_guardrail`` (after): a
  ToolInputGuardrail / ToolOutputGuardrail for any FunctionTool;
* ``guard(tool)``: a copy of a FunctionTool with both attached and its
  ``on_invoke_tool`` wrapped, so a modify's arguments are the ones the tool
  receives and a warn reaches the model with the tool's output;
* ``input_guardrail`` (input phase) and ``output_guardrail`` (output phase):
  an InputGuardrail (blocking: it runs before the model) and an
  OutputGuardrail for an Agent.

Verdicts (table in docs/python.md): tool guardrails: allow runs; warn runs
and the model reads the warning after the output (through guard()); modify
runs with celguard's arguments (guard(); a bare input guardrail cannot
rewrite and rejects the call instead, telling the model the arguments
celguard would accept); block and an unapproved ask reject the call with
the reason as the model's tool output (reject_content), the tool never runs;
halt raises the SDK's tripwire exception, ending the run. Agent guardrails
can only trip or not: block, halt, an unapproved ask and a modify (no rewrite
exists there) trip; allow and warn pass (warn is in output_info).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from agents import (
    Agent as SDKAgent,
    FunctionTool,
    GuardrailFunctionOutput,
    InputGuardrail,
    OutputGuardrail,
    RunContextWrapper,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
)
from agents.items import TResponseInputItem
from agents.tool_context import ToolContext

from ._async.client import AsyncSession
from ._base import Agent
from ._common import Approver, approve, refusal_text, warning_text
from ._decision import Decision


class CelguardGuards:
    """The SDK guardrails for one celguard session.

    approver settles ask decisions; without one an ask is refused.
    """

    def __init__(self, session: AsyncSession, *, approver: Approver | None = None) -> None:
        self.session = session
        self.approver = approver
        # Per tool call id: arguments a modify chose, warnings for the output.
        self._args: dict[str, dict[str, Any]] = {}
        self._notes: dict[str, list[str]] = {}
        self._guarded: set[str] = set()
        self.tool_input_guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(
            guardrail_function=self._before, name="celguard_before")
        self.tool_output_guardrail: ToolOutputGuardrail[Any] = ToolOutputGuardrail(
            guardrail_function=self._after, name="celguard_after")
        self.input_guardrail: InputGuardrail[Any] = InputGuardrail(
            guardrail_function=self._input, name="celguard_input", run_in_parallel=False)
        self.output_guardrail: OutputGuardrail[Any] = OutputGuardrail(
            guardrail_function=self._output, name="celguard_output")

    def guard(self, tool: FunctionTool) -> FunctionTool:
        """A copy of tool with celguard's tool guardrails first and its
        invoker wrapped to apply a modify's arguments."""
        inner = tool.on_invoke_tool
        guards = self

        async def invoke(ctx: ToolContext[Any], raw: str) -> Any:
            args = guards._args.pop(ctx.tool_call_id, None)
            return await inner(ctx, json.dumps(args) if args is not None else raw)

        self._guarded.add(tool.name)
        return dataclasses.replace(
            tool,
            on_invoke_tool=invoke,
            tool_input_guardrails=[self.tool_input_guardrail, *(tool.tool_input_guardrails or [])],
            tool_output_guardrails=[self.tool_output_guardrail, *(tool.tool_output_guardrails or [])],
        )

    def _agent(self, agent: Any) -> Agent | None:
        name = getattr(agent, "name", None)
        if not isinstance(name, str) or not name:
            return self.session.agent
        ids = self.session.agent.ids if self.session.agent is not None else None
        return Agent(name=name, ids=ids)

    async def _before(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        args = _parse_args(ctx.tool_arguments)
        if args is None:
            d = Decision.fail_closed("invalid_input", "tool arguments are not a JSON object",
                                     phase="before", tool=ctx.tool_name)
        else:
            d = await self.session.before(ctx.tool_name, args, call_id=ctx.tool_call_id, agent=self._agent(data.agent))
        info = dict(d.raw)
        if d.verdict == "allow" or (d.verdict == "ask" and await approve(self.approver, d)):
            return ToolGuardrailFunctionOutput.allow(info)
        if d.verdict == "warn":
            self._notes.setdefault(ctx.tool_call_id, []).append(warning_text(d))
            return ToolGuardrailFunctionOutput.allow(info)
        if d.verdict == "modify" and d.args is not None:
            if ctx.tool_name in self._guarded:
                self._args[ctx.tool_call_id] = d.args
                return ToolGuardrailFunctionOutput.allow(info)
            return ToolGuardrailFunctionOutput.reject_content(
                f"[celguard would run this call only as {json.dumps(d.args)}] {d.describe()}", info)
        if d.verdict == "halt":
            return ToolGuardrailFunctionOutput.raise_exception(info)
        return ToolGuardrailFunctionOutput.reject_content(refusal_text(d), info)

    async def _after(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        notes = self._notes.pop(ctx.tool_call_id, [])
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
            text, notes = d.content, notes
        elif d.verdict == "warn":
            notes.append(warning_text(d))
        elif not notes:
            return ToolGuardrailFunctionOutput.allow(info)
        # reject_content is the SDK's only way to change what the model reads.
        return ToolGuardrailFunctionOutput.reject_content("\n".join([text, *notes]), info)

    async def _input(self, ctx: RunContextWrapper[Any], agent: SDKAgent[Any],
                     items: str | list[TResponseInputItem]) -> GuardrailFunctionOutput:
        d = await self.session.input(_messages(items), agent=self._agent(agent))
        return _trip(d)

    async def _output(self, ctx: RunContextWrapper[Any], agent: SDKAgent[Any], output: Any) -> GuardrailFunctionOutput:
        text = output if isinstance(output, str) else json.dumps(output, default=str)
        d = await self.session.output(text, None if isinstance(output, str) else output, agent=self._agent(agent))
        return _trip(d)


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


__all__ = ["CelguardGuards"]
