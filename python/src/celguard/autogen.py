"""celguard for AutoGen (autogen-core, autogen-agentchat).

Two ways in:

* ``CelguardGuardrailProvider`` implements the ``GuardrailProvider`` protocol
  proposed for autogen-core (allow/deny/modify with a reason, modified
  arguments and metadata). The protocol is not in a release yet, so this
  module declares it (``GuardrailProvider``, ``GuardrailResult``,
  ``GuardrailAction``) as proposed.
* Since no released AssistantAgent calls a provider, ``GuardedTool`` wraps any
  ``BaseTool`` (its ``run_json``) and ``GuardedWorkbench`` any ``Workbench``
  (its ``call_tool``, an ``McpWorkbench`` included) so today's AssistantAgent
  is guarded. Both pass the agent's name and the call's id to celguard, and
  decide the result too (after phase).

Verdicts (docs/python.md has the table): allow runs; warn runs and appends a
warning to the result the model reads; modify runs with celguard's
arguments; block returns an error result with the reason and never runs the
tool; ask runs only when the approver says yes, else as block; halt returns
an error result and holds for the rest of the turn: the provider refuses
every later call of every agent that shares it (and the server every call of
the session), ``provider.termination()`` ends a team's run with the reason
as its ``stop_reason``, and ``provider.model_client(client)`` answers every
later model call of the turn with the refusal instead of calling the model,
so an agent's tool loop ends at once.

The model's answers (output phase) are decided by that model client too
(``GuardedModelClient``): a text answer is allowed, annotated (warn),
rewritten (modify) or replaced by the refusal (block, ask, halt; a halt
also ends the turn as above). A streamed answer (``model_client_stream=True``)
is decided as it streams (celguard.AsyncOutputStream): a chunk reaches the
agent's stream only once celguard decided it, a secret is redacted in
flight, a block ends the chunks with the refusal.

Turns: AutoGen's run boundary is ``run``/``run_stream`` of an agent or a
team; ``await provider.run(team_or_agent, task=...)`` (or
``provider.run_stream``) starts a celguard turn, runs, ends the turn, and
gives the halt's reason as the TaskResult's ``stop_reason``. ``async with
provider.turn():`` does the same around code of your own.
"""

from __future__ import annotations

import enum
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncGenerator, AsyncIterator, List, Mapping, Protocol, Sequence, runtime_checkable

from autogen_agentchat.base import TaskResult, TerminationCondition
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, StopMessage
from autogen_core import CancellationToken
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import (
    BaseTool,
    TextResultContent,
    ToolResult,
    ToolSchema,
    Workbench,
)
from pydantic import BaseModel

from ._async.client import AsyncSession
from ._base import SECRET_WINDOW, Agent
from ._common import Approver, approve, refusal_text, warning_text
from ._decision import CODE_ADAPTER_ERROR, Decision


class GuardrailAction(str, enum.Enum):
    """The proposed protocol's decision (named Decision in the proposal)."""

    ALLOW = "allow"
    DENY = "deny"
    MODIFY = "modify"


@dataclass
class GuardrailResult:
    """The proposed protocol's result."""

    decision: GuardrailAction
    reason: str | None = None
    modified_args: Mapping[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class GuardrailProvider(Protocol):
    """The GuardrailProvider protocol as proposed for autogen-core."""

    async def evaluate(
        self,
        *,
        tool_name: str,
        args: Mapping[str, Any],
        agent_name: str | None = None,
        call_id: str | None = None,
        cancellation_token: Any = None,
    ) -> GuardrailResult:
        """Decide a tool call before it runs."""
        ...


def to_guardrail_result(d: Decision, *, approved: bool = False) -> GuardrailResult:
    """Map a celguard Decision onto the proposed GuardrailResult.

    metadata always has ``celguard_verdict`` and, when set, ``code``,
    ``rule_id`` and ``policy``; a warn adds ``warning``, a halt ``halt: True``,
    an unapproved ask ``ask: True``.
    """
    meta: dict[str, Any] = {"celguard_verdict": d.verdict}
    for k in ("code", "rule_id", "policy"):
        v = getattr(d, k)
        if v:
            meta[k] = v
    if d.metadata:
        meta["rule_metadata"] = dict(d.metadata)
    if d.verdict == "allow" or (d.verdict == "ask" and approved):
        return GuardrailResult(GuardrailAction.ALLOW, d.reason or None, None, meta)
    if d.verdict == "warn":
        meta["warning"] = d.describe()
        return GuardrailResult(GuardrailAction.ALLOW, d.reason or None, None, meta)
    if d.verdict == "modify" and d.args is not None:
        return GuardrailResult(GuardrailAction.MODIFY, d.reason or None, dict(d.args), meta)
    if d.verdict == "halt":
        meta["halt"] = True
    if d.verdict == "ask":
        meta["ask"] = True
    return GuardrailResult(GuardrailAction.DENY, refusal_text(d), None, meta)


class CelguardGuardrailProvider:
    """A GuardrailProvider backed by a celguard session (before phase), with
    the after phase as ``evaluate_result``.

    approver settles ask decisions (see celguard.Approver); without one an
    ask is denied. Give one provider to every agent of a team (and one
    session): a halt of one then refuses the others for the rest of the turn.
    """

    def __init__(self, session: AsyncSession, *, approver: Approver | None = None) -> None:
        self.session = session
        self.approver = approver
        self.halted: Decision | None = None
        """The halt that ended the current turn, if any."""

    async def start_turn(self) -> int:
        """Start a celguard turn (forgetting the previous turn's halt)."""
        self.halted = None
        return await self.session.start_turn()

    async def end_turn(self) -> Decision:
        """End the celguard turn."""
        return await self.session.end_turn()

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[CelguardGuardrailProvider]:
        """A turn around the body: started on entry, ended on exit."""
        await self.start_turn()
        try:
            yield self
        finally:
            await self.end_turn()

    async def run(self, runner: Any, *, task: Any = None, cancellation_token: CancellationToken | None = None,
                  **kwargs: Any) -> TaskResult:
        """runner.run (an agent or a team) in a turn of its own; a halt's
        reason is the result's stop_reason."""
        async with self.turn():
            result: TaskResult = await runner.run(task=task, cancellation_token=cancellation_token, **kwargs)
        return self._with_halt(result)

    async def run_stream(self, runner: Any, *, task: Any = None, cancellation_token: CancellationToken | None = None,
                         **kwargs: Any) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        """runner.run_stream in a turn of its own (see run)."""
        async with self.turn():
            async for item in runner.run_stream(task=task, cancellation_token=cancellation_token, **kwargs):
                yield self._with_halt(item) if isinstance(item, TaskResult) else item

    def _with_halt(self, result: TaskResult) -> TaskResult:
        if self.halted is None:
            return result
        return TaskResult(messages=result.messages, stop_reason=refusal_text(self.halted))

    def termination(self) -> TerminationCondition:
        """A termination condition that ends a team's run once celguard
        halted the turn (combine it: ``provider.termination() | ...``)."""
        return HaltTermination(self)

    def model_client(self, client: ChatCompletionClient, *, agent_name: str | None = None,
                     holdback: int = SECRET_WINDOW) -> ChatCompletionClient:
        """client with its answers decided (output phase, as they stream
        too), answering with the refusal instead of calling the model once
        celguard halted the turn (so an agent's tool loop ends)."""
        return GuardedModelClient(client, self, agent_name=agent_name, holdback=holdback)

    def _note(self, d: Decision) -> None:
        if d.verdict == "halt" and self.halted is None:
            self.halted = d

    async def decide(self, *, tool_name: str, args: Mapping[str, Any], agent_name: str | None = None,
                     call_id: str | None = None) -> tuple[Decision, GuardrailResult]:
        """The celguard Decision and its GuardrailResult. After a halt every
        call of the turn is refused without asking."""
        if self.halted is not None:
            d = self.halted
        else:
            d = await self.session.before(tool_name, args, call_id=call_id, agent=_agent(agent_name, self.session))
            self._note(d)
        approved = d.verdict == "ask" and await approve(self.approver, d)
        return d, to_guardrail_result(d, approved=approved)

    async def evaluate(self, *, tool_name: str, args: Mapping[str, Any], agent_name: str | None = None,
                       call_id: str | None = None, cancellation_token: Any = None) -> GuardrailResult:
        """The protocol's method."""
        _, result = await self.decide(tool_name=tool_name, args=args, agent_name=agent_name, call_id=call_id)
        return result

    async def evaluate_result(self, *, tool_name: str, args: Mapping[str, Any], content: Any, is_error: bool,
                              agent_name: str | None = None, call_id: str | None = None) -> Decision:
        """Decide a tool's result (after phase)."""
        d = await self.session.after(tool_name, args, content, is_error=is_error, call_id=call_id,
                                     agent=_agent(agent_name, self.session))
        self._note(d)
        return d


class HaltTermination(TerminationCondition):
    """Ends a team's run once its provider saw a halt; the StopMessage (the
    run's stop_reason) is the refusal with celguard's reason."""

    def __init__(self, provider: CelguardGuardrailProvider) -> None:
        self._provider = provider
        self._terminated = False

    @property
    def terminated(self) -> bool:
        """Whether the condition fired."""
        return self._terminated

    async def __call__(self, messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> StopMessage | None:
        """A StopMessage once the provider halted."""
        if self._terminated or self._provider.halted is None:
            return None
        self._terminated = True
        return StopMessage(content=refusal_text(self._provider.halted), source="celguard")

    async def reset(self) -> None:
        """Ready for the next run."""
        self._terminated = False


class GuardedModelClient(ChatCompletionClient):
    """A ChatCompletionClient whose text answers celguard decides (output
    phase, a streamed one as it streams) and which, once its provider saw a
    halt, answers with the refusal instead of calling the model (the agent's
    tool loop ends). Make one with provider.model_client."""

    def __init__(self, inner: ChatCompletionClient, provider: CelguardGuardrailProvider, *,
                 agent_name: str | None = None, holdback: int = SECRET_WINDOW) -> None:
        self.inner = inner
        self._provider = provider
        self._agent_name = agent_name
        self._holdback = holdback

    def _refusal(self) -> CreateResult | None:
        if self._provider.halted is None:
            return None
        return CreateResult(finish_reason="stop", content=refusal_text(self._provider.halted),
                            usage=RequestUsage(prompt_tokens=0, completion_tokens=0), cached=False)

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        """The model's answer as celguard decides it, or the refusal after a
        halt."""
        refusal = self._refusal()
        if refusal is not None:
            return refusal
        result = await self.inner.create(messages, **kwargs)
        if not isinstance(result.content, str):
            return result  # tool calls: decided by the tools' guardrails
        session = self._provider.session
        d = await session.output(result.content, agent=_agent(self._agent_name, session))
        self._provider._note(d)
        if d.verdict == "allow":
            return result
        if d.verdict == "warn":
            text = "\n".join([result.content, warning_text(d)])
        elif d.verdict == "modify" and d.output is not None and isinstance(d.output.get("text"), str):
            text = str(d.output["text"])
        else:
            text = refusal_text(d)
        return result.model_copy(update={"content": text})

    async def create_stream(self, messages: Sequence[LLMMessage],
                            **kwargs: Any) -> AsyncGenerator[str | CreateResult, None]:
        """The model's stream, each chunk passed on once celguard decided it;
        the refusal after a halt."""
        refusal = self._refusal()
        if refusal is not None:
            yield refusal
            return
        session = self._provider.session
        stream = session.output_stream(holdback=self._holdback, agent=_agent(self._agent_name, session))
        async for item in self.inner.create_stream(messages, **kwargs):
            if isinstance(item, str):
                out = await stream.feed(item)
                if out:
                    yield out
                continue
            if isinstance(item.content, str):
                if not stream.original and item.content:
                    await stream.feed(item.content)  # an answer that came whole
                rest = await stream.finish()
                if rest:
                    yield rest
                if stream.decision is not None:
                    self._provider._note(stream.decision)
                item = item.model_copy(update={"content": stream.text})
            yield item

    async def close(self) -> None:
        """Closes the wrapped client."""
        await self.inner.close()

    def actual_usage(self) -> RequestUsage:
        """The wrapped client's."""
        return self.inner.actual_usage()

    def total_usage(self) -> RequestUsage:
        """The wrapped client's."""
        return self.inner.total_usage()

    def count_tokens(self, messages: Sequence[LLMMessage], **kwargs: Any) -> int:
        """The wrapped client's."""
        return self.inner.count_tokens(messages, **kwargs)

    def remaining_tokens(self, messages: Sequence[LLMMessage], **kwargs: Any) -> int:
        """The wrapped client's."""
        return self.inner.remaining_tokens(messages, **kwargs)

    @property
    def capabilities(self) -> ModelCapabilities:
        """The wrapped client's."""
        return self.inner.capabilities

    @property
    def model_info(self) -> ModelInfo:
        """The wrapped client's."""
        return self.inner.model_info


def _agent(name: str | None, session: AsyncSession) -> Agent | None:
    if not name:
        return None
    ids = session.agent.ids if session.agent is not None else None
    return Agent(name=name, ids=ids)


class ToolDenied(Exception):
    """Raised inside a guarded tool for a refused call; AutoGen's workbench
    turns it into an error result (is_error) that the model reads."""


class _Warned:
    """A tool's return value with warnings for the model appended."""

    def __init__(self, value: Any, notes: Sequence[str]) -> None:
        self.value = value
        self.notes = list(notes)


class GuardedTool(BaseTool[BaseModel, BaseModel]):
    """Any BaseTool, guarded by a GuardrailProvider on every run_json.

    With a CelguardGuardrailProvider the result is decided too (after
    phase): block withholds it, modify replaces it, warn annotates it.
    A halt is an error result (raising would leave AssistantAgent waiting on
    its tool queue); the server refuses every later call of the turn.
    """

    def __init__(self, tool: BaseTool[Any, Any], provider: GuardrailProvider, *,
                 agent_name: str | None = None) -> None:
        super().__init__(tool.args_type(), tool.return_type(), tool.name, tool.description)
        self._inner = tool
        self._provider = provider
        self._agent_name = agent_name

    @property
    def schema(self) -> ToolSchema:
        """The wrapped tool's schema, unchanged."""
        return self._inner.schema

    def return_value_as_string(self, value: Any) -> str:
        """The wrapped tool's rendering, with warnings appended."""
        if isinstance(value, _Warned):
            text = self._inner.return_value_as_string(value.value)
            return "\n".join([text, *value.notes])
        return self._inner.return_value_as_string(value)

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> BaseModel:
        """Runs through run_json, so a direct run() is guarded too."""
        out: BaseModel = await self.run_json(args.model_dump(), cancellation_token)
        return out

    async def run_json(self, args: Mapping[str, Any], cancellation_token: CancellationToken,
                       call_id: str | None = None) -> Any:
        """Decide, run the wrapped tool with the allowed arguments, decide its
        result."""
        if isinstance(self._provider, CelguardGuardrailProvider):
            d, g = await self._provider.decide(tool_name=self.name, args=args, agent_name=self._agent_name,
                                               call_id=call_id)
        else:
            d, g = None, await self._provider.evaluate(tool_name=self.name, args=args, agent_name=self._agent_name,
                                                       call_id=call_id, cancellation_token=cancellation_token)
        if g.decision == GuardrailAction.DENY:
            raise ToolDenied(g.reason or "denied by guardrail")
        run_args: Mapping[str, Any] = args
        if g.decision == GuardrailAction.MODIFY:
            if g.modified_args is None:
                raise ToolDenied(f"[celguard blocked this call] modify without arguments [{CODE_ADAPTER_ERROR}]")
            run_args = g.modified_args
        notes = [str(g.metadata["warning"])] if "warning" in g.metadata else []
        try:
            value = await self._inner.run_json(run_args, cancellation_token, call_id=call_id)
            is_error = False
        except Exception as exc:
            value, is_error = exc, True
        if d is not None and isinstance(self._provider, CelguardGuardrailProvider):
            content = self._inner.return_value_as_string(value) if not is_error else str(value)
            a = await self._provider.evaluate_result(tool_name=self.name, args=run_args, content=content,
                                                     is_error=is_error, agent_name=self._agent_name,
                                                     call_id=call_id)
            if a.verdict in ("block", "halt", "ask"):
                raise ToolDenied(refusal_text(a))
            if a.verdict == "modify" and a.content is not None:
                return _Warned(a.content, notes) if notes else a.content
            if a.verdict == "warn":
                notes.append(warning_text(a))
        if is_error:
            assert isinstance(value, Exception)
            raise value
        return _Warned(value, notes) if notes else value


class GuardedWorkbench(Workbench):
    """Any Workbench (StaticWorkbench, McpWorkbench, ...), guarded on every
    call_tool, before and after the call.

    Give it to AssistantAgent(workbench=...). agent_name is the agent's
    name as celguard sees it (AutoGen does not pass it to a workbench).
    """

    def __init__(self, workbench: Workbench, provider: CelguardGuardrailProvider, *,
                 agent_name: str | None = None) -> None:
        self._inner = workbench
        self._provider = provider
        self._agent_name = agent_name

    async def list_tools(self) -> List[ToolSchema]:
        """The wrapped workbench's tools."""
        return await self._inner.list_tools()

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None,
                        cancellation_token: CancellationToken | None = None,
                        call_id: str | None = None) -> ToolResult:
        """Decide, call the wrapped workbench with the allowed arguments,
        decide the result."""
        args: Mapping[str, Any] = arguments or {}
        d, g = await self._provider.decide(tool_name=name, args=args, agent_name=self._agent_name, call_id=call_id)
        if g.decision == GuardrailAction.DENY:
            # A halt does not cancel the token: inside a team that leaves
            # the run waiting forever, alone it raises a CancelledError
            # without the reason. The provider ends the turn instead.
            return _error(name, g.reason or refusal_text(d))
        if g.decision == GuardrailAction.MODIFY:
            if g.modified_args is None:
                return _error(name, f"[celguard blocked this call] modify without arguments [{CODE_ADAPTER_ERROR}]")
            args = g.modified_args
        result = await self._inner.call_tool(name, args, cancellation_token, call_id)
        notes = [str(g.metadata["warning"])] if "warning" in g.metadata else []
        a = await self._provider.evaluate_result(tool_name=name, args=args, content=result.to_text(replace_image="[image]"),
                                                 is_error=result.is_error, agent_name=self._agent_name,
                                                 call_id=call_id)
        if a.verdict in ("block", "halt", "ask"):
            return _error(name, refusal_text(a))
        if a.verdict == "modify" and a.content is not None:
            result = ToolResult(name=result.name, result=[TextResultContent(content=a.content)],
                                is_error=result.is_error)
        elif a.verdict == "warn":
            notes.append(warning_text(a))
        if notes:
            result = ToolResult(name=result.name,
                                result=[*result.result, *[TextResultContent(content=n) for n in notes]],
                                is_error=result.is_error)
        return result

    async def start(self) -> None:
        """Starts the wrapped workbench."""
        await self._inner.start()

    async def stop(self) -> None:
        """Stops the wrapped workbench."""
        await self._inner.stop()

    async def reset(self) -> None:
        """Resets the wrapped workbench."""
        await self._inner.reset()

    async def save_state(self) -> Mapping[str, Any]:
        """The wrapped workbench's state."""
        return await self._inner.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Loads the wrapped workbench's state."""
        await self._inner.load_state(state)


def _error(name: str, text: str) -> ToolResult:
    return ToolResult(name=name, result=[TextResultContent(content=text)], is_error=True)


__all__ = [
    "CelguardGuardrailProvider",
    "GuardedTool",
    "GuardedWorkbench",
    "GuardrailAction",
    "GuardrailProvider",
    "GuardrailResult",
    "GuardedModelClient",
    "HaltTermination",
    "ToolDenied",
    "to_guardrail_result",
]

