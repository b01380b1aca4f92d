"""OpenAI Agents SDK: Runner's own loop with OpenAIChatCompletionsModel talking
to a scripted OpenAI server on 127.0.0.1, tools guarded by CelguardGuards,
against celguard serve."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    InputGuardrailTripwireTriggered,
    OpenAIChatCompletionsModel,
    OutputGuardrailTripwireTriggered,
    Runner,
    ToolInputGuardrailTripwireTriggered,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

import celguard
from toolbox import Toolbox
from celguard.openai_agents import CelguardGuards
from fakeopenai import FakeOpenAI, text, tool_call

set_tracing_disabled(True)


async def make(url: str, fake: FakeOpenAI, *, name: str = "coder", session_id: str | None = None,
               bare: bool = False) -> tuple[Agent[Any], Toolbox]:
    client = celguard.AsyncClient(url)
    session = await client.session(session_id or uuid.uuid4().hex, agent=celguard.Agent(name=name))
    await session.start_turn()
    guards = CelguardGuards(session)
    tools = Toolbox()
    if bare:  # the SDK's guardrail objects alone, no guard() wrapper
        ts = [function_tool(f) for f in tools.functions()]
        for t in ts:
            t.tool_input_guardrails = [guards.tool_input_guardrail]
            t.tool_output_guardrails = [guards.tool_output_guardrail]
    else:
        ts = [guards.guard(t) for t in [function_tool(f) for f in tools.functions()]]
    model = OpenAIChatCompletionsModel(model="fake", openai_client=AsyncOpenAI(base_url=fake.url, api_key="test"))
    return Agent(name=name, instructions="use the tools", model=model, tools=list(ts)), tools


async def test_blocked_tool_never_runs(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "blocked-marker"
    with FakeOpenAI([tool_call("write_marker", {"path": str(marker), "content": "x"}), text("done")]) as fake:
        a, tools = await make(url, fake)
        r = await Runner.run(a, "write it")
    assert not marker.exists() and tools.ran == [] and r.final_output == "done"
    assert "writing there is not allowed" in fake.sent_text()


async def test_warn_reaches_the_model(url: str) -> None:
    with FakeOpenAI([tool_call("lookup", {"query": "q"}), text("done")]) as fake:
        a, tools = await make(url, fake)
        await Runner.run(a, "look")
    assert tools.ran == [("lookup", {"query": "q"})]
    sent = str(fake.requests[1]["messages"])
    assert "result for q" in sent and "STALE-DATA-WARNING" in sent


async def test_halt_stops_the_turn(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "after-halt"
    with FakeOpenAI([tool_call("deploy", {"target": "prod"}),
                     tool_call("write_marker", {"path": str(marker), "content": "x"}), text("done")]) as fake:
        a, tools = await make(url, fake)
        with pytest.raises(ToolInputGuardrailTripwireTriggered) as exc:
            await Runner.run(a, "deploy")
    assert tools.ran == [] and not marker.exists() and len(fake.requests) == 1
    assert exc.value.output.output_info["code"] == "deploy_freeze"


async def test_modify_changes_the_arguments(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "rewrite-marker"
    with FakeOpenAI([tool_call("write_marker", {"path": str(marker), "content": "rm -rf /"}), text("done")]) as fake:
        a, tools = await make(url, fake)
        await Runner.run(a, "write")
    assert marker.read_text() == "sanitized"
    assert tools.ran == [("write_marker", {"path": str(marker), "content": "sanitized"})]


async def test_modify_without_guard_rejects(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "rewrite-marker"
    with FakeOpenAI([tool_call("write_marker", {"path": str(marker), "content": "rm -rf /"}), text("done")]) as fake:
        a, tools = await make(url, fake, bare=True)
        await Runner.run(a, "write")
    assert not marker.exists() and tools.ran == []
    assert "sanitized" in str(fake.requests[1]["messages"])


async def test_after_modify_replaces_the_output(url: str) -> None:
    with FakeOpenAI([tool_call("read_secret", {}), text("done")]) as fake:
        a, tools = await make(url, fake)
        await Runner.run(a, "read")
    sent = str(fake.requests[1]["messages"])
    assert tools.ran == [("read_secret", {})] and "[redacted]" in sent and "hunter2" not in sent


async def test_rate_limit_holds_across_two_agents(url: str) -> None:
    sid = uuid.uuid4().hex
    with FakeOpenAI([tool_call("send_email", {"to": "a"}), tool_call("send_email", {"to": "b"}, "c2"), text("ok"),
                     tool_call("send_email", {"to": "c"}, "c3"), text("ok")]) as fake:
        a1, t1 = await make(url, fake, name="first", session_id=sid)
        a2, t2 = await make(url, fake, name="second", session_id=sid)
        await Runner.run(a1, "send two")
        await Runner.run(a2, "send one more")
    assert len(t1.ran) == 2 and t2.ran == []
    assert "at most two emails" in str(fake.requests[-1]["messages"])


async def guarded_agent(url: str, fake: FakeOpenAI) -> Agent[Any]:
    session = await celguard.AsyncClient(url).session()
    await session.start_turn()
    guards = CelguardGuards(session)
    model = OpenAIChatCompletionsModel(model="fake", openai_client=AsyncOpenAI(base_url=fake.url, api_key="test"))
    return Agent(name="coder", instructions="answer", model=model, input_guardrails=[guards.input_guardrail],
                 output_guardrails=[guards.output_guardrail])


async def test_input_guardrail_block_stops_before_the_model(url: str) -> None:
    with FakeOpenAI([text("never")]) as fake:
        a = await guarded_agent(url, fake)
        with pytest.raises(InputGuardrailTripwireTriggered) as exc:
            await Runner.run(a, "FORBIDDEN-PROMPT please")
    assert fake.requests == [] and exc.value.guardrail_result.output.output_info["code"] == "forbidden_prompt"


async def test_input_guardrail_modify_trips(url: str) -> None:
    with FakeOpenAI([text("never")]) as fake:
        a = await guarded_agent(url, fake)
        with pytest.raises(InputGuardrailTripwireTriggered):
            await Runner.run(a, "secret MASK-ME here")
    assert fake.requests == []


async def test_output_guardrail(url: str) -> None:
    with FakeOpenAI([text("fine answer")]) as fake:
        a = await guarded_agent(url, fake)
        assert (await Runner.run(a, "go")).final_output == "fine answer"
    for answer in ("BAD-OUT", "the SECRET-OUT is 42"):  # block; modify (no rewrite here: trips)
        with FakeOpenAI([text(answer)]) as fake:
            a = await guarded_agent(url, fake)
            with pytest.raises(OutputGuardrailTripwireTriggered):
                await Runner.run(a, "go")
