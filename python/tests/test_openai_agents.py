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
from celguard.openai_agents import CelguardGuards, UnguardedStream
from fakeopenai import FakeOpenAI, text, tool_call

set_tracing_disabled(True)


def fake_model(fake: FakeOpenAI) -> OpenAIChatCompletionsModel:
    return OpenAIChatCompletionsModel(model="fake", openai_client=AsyncOpenAI(base_url=fake.url, api_key="test"))


async def make(url: str, fake: FakeOpenAI, *, name: str = "coder", session_id: str | None = None,
               bare: bool = False, guards: CelguardGuards | None = None) -> tuple[Agent[Any], Toolbox]:
    if guards is None:
        client = celguard.AsyncClient(url)
        session = await client.session(session_id or uuid.uuid4().hex, agent=celguard.Agent(name=name))
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


async def test_a_rewrite_is_kept_per_guarded_tool_not_per_name(url: str, tmp_path: Path) -> None:
    # One CelguardGuards: guard() on one write_marker, its bare guardrail on
    # another tool of the same name. The bare one cannot apply celguard's
    # rewrite, so its call is refused, never run with the model's arguments.
    guards = CelguardGuards(await celguard.AsyncClient(url).session())
    guarded_box, bare_box = Toolbox(), Toolbox()
    guarded = guards.guard(function_tool(guarded_box.write_marker))
    bare = function_tool(bare_box.write_marker)
    bare.tool_input_guardrails = [guards.tool_input_guardrail]
    bare.tool_output_guardrails = [guards.tool_output_guardrail]
    first, second = tmp_path / "rewrite-1", tmp_path / "rewrite-2"
    with FakeOpenAI([tool_call("write_marker", {"path": str(first), "content": "rm -rf /"}, "c1"), text("ok"),
                     tool_call("write_marker", {"path": str(second), "content": "rm -rf /"}, "c1"), text("ok")]) as fake:
        await Runner.run(Agent(name="a", model=fake_model(fake), tools=[guarded]), "write")
        await Runner.run(Agent(name="b", model=fake_model(fake), tools=[bare]), "write")
    assert guarded_box.ran == [("write_marker", {"path": str(first), "content": "sanitized"})]
    assert bare_box.ran == [] and not second.exists()
    assert "would run this call only as" in str(fake.requests[3]["messages"])


async def test_a_guarded_tool_runs_only_what_its_guardrail_decided(url: str, tmp_path: Path) -> None:
    guards = CelguardGuards(await celguard.AsyncClient(url).session())
    box = Toolbox()
    tool = guards.guard(function_tool(box.write_marker))
    tool.tool_input_guardrails = []  # the decision never happens: the invoker refuses
    marker = tmp_path / "marker"
    with FakeOpenAI([tool_call("write_marker", {"path": str(marker), "content": "x"}), text("ok")]) as fake:
        await Runner.run(Agent(name="a", model=fake_model(fake), tools=[tool]), "write")
    assert box.ran == [] and not marker.exists()
    assert "adapter_error" in str(fake.requests[1]["messages"])


async def test_two_runs_with_a_halt_in_the_first(url: str) -> None:
    # Turns follow the runs: the halt of the first run does not carry into
    # the second, on one agent, one CelguardGuards, one session.
    guards = CelguardGuards(await celguard.AsyncClient(url).session())
    with FakeOpenAI([tool_call("deploy", {"target": "prod"}), tool_call("lookup", {"query": "q"}, "c2"),
                     text("done")]) as fake:
        a, tools = await make(url, fake, guards=guards)
        a.output_guardrails = [guards.output_guardrail]
        with pytest.raises(ToolInputGuardrailTripwireTriggered):
            await Runner.run(a, "deploy")
        assert (await Runner.run(a, "look it up")).final_output == "done"
    assert tools.ran == [("lookup", {"query": "q"})]
    turn = guards.session.turn
    assert turn >= 2 and not guards._turn_open  # the output guardrail ended the second run's turn


SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


async def test_streamed_answer_is_decided_as_it_streams(url: str) -> None:
    guards = CelguardGuards(await celguard.AsyncClient(url).session())
    answer = "here is the key: " + SECRET + " use it well"
    with FakeOpenAI([text(answer)], chunk_size=5) as fake:
        agent = Agent(name="a", model=guards.model(fake_model(fake)), hooks=guards.agent_hooks,
                      output_guardrails=[guards.output_guardrail])
        result = Runner.run_streamed(agent, "the key?")
        deltas = [e.data.delta async for e in result.stream_events()
                  if e.type == "raw_response_event" and getattr(e.data, "type", "") == "response.output_text.delta"]
    assert len(fake.sent_chunks) > 10 and any(SECRET[:6] in c or SECRET[-6:] in c for c in fake.sent_chunks) is False
    seen = "".join(deltas)
    assert SECRET not in seen and SECRET[:10] not in seen and "[REDACTED:github_token]" in seen
    assert result.final_output == seen == answer.replace(SECRET, "[REDACTED:github_token]")
    assert SECRET not in str(result.new_items) and SECRET not in str(result.raw_responses)


async def test_streamed_block_ends_the_stream_with_the_refusal(url: str) -> None:
    guards = CelguardGuards(await celguard.AsyncClient(url).session())
    with FakeOpenAI([text("this is BAD-OUT text")], chunk_size=4) as fake:
        agent = Agent(name="a", model=guards.model(fake_model(fake)), hooks=guards.agent_hooks)
        result = Runner.run_streamed(agent, "go")
        seen = "".join([e.data.delta async for e in result.stream_events()
                        if e.type == "raw_response_event" and e.data.type == "response.output_text.delta"])
    assert "BAD-OUT" not in seen and "that answer is withheld" in seen and result.final_output == seen


async def test_streamed_run_of_an_unwrapped_model_is_refused(url: str) -> None:
    guards = CelguardGuards(await celguard.AsyncClient(url).session())
    with FakeOpenAI([text("the key: " + SECRET)]) as fake:
        agent = Agent(name="a", model=fake_model(fake), hooks=guards.agent_hooks)
        result = Runner.run_streamed(agent, "go")
        with pytest.raises(UnguardedStream, match="guards.model"):
            async for _ in result.stream_events():
                pass
        assert fake.requests == []
        # the same agent runs (not streamed) as before
        fake.script = [text("fine")]
        assert (await Runner.run(agent, "go")).final_output == "fine"


async def test_one_run_is_one_turn(url: str) -> None:
    # every callback of a run (tool guardrails, the output guardrail) knows
    # the run: two tool calls, one turn; the next run, the next turn
    guards = CelguardGuards(await celguard.AsyncClient(url).session())
    with FakeOpenAI([tool_call("lookup", {"query": "a"}), tool_call("lookup", {"query": "b"}, "c2"), text("done"),
                     tool_call("lookup", {"query": "c"}, "c3"), text("done")]) as fake:
        a, tools = await make(url, fake, guards=guards)
        a.output_guardrails = [guards.output_guardrail]
        await Runner.run(a, "look twice")
        first = guards.session.turn
        await Runner.run(a, "look once")
    assert len(tools.ran) == 3 and guards.session.turn == first + 1
