"""AutoGen: AssistantAgent's own tool loop with ReplayChatCompletionClient,
tools guarded by GuardedTool / GuardedWorkbench, against celguard serve."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any, Sequence

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_agentchat.messages import ToolCallExecutionEvent
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, ModelFamily, ModelInfo, RequestUsage
from autogen_core.tools import FunctionTool, StaticWorkbench
from autogen_ext.models.replay import ReplayChatCompletionClient

import celguard
from toolbox import Toolbox
from celguard.autogen import (
    CelguardGuardrailProvider,
    GuardedTool,
    GuardedWorkbench,
    GuardrailAction,
    GuardrailProvider,
)

INFO = ModelInfo(vision=False, function_calling=True, json_output=False, family=ModelFamily.UNKNOWN,
                 structured_output=False)


def call(name: str, args: dict[str, Any], cid: str | None = None) -> CreateResult:
    return CreateResult(finish_reason="function_calls",
                        content=[FunctionCall(id=cid or f"call-{name}", name=name, arguments=json.dumps(args))],
                        usage=RequestUsage(prompt_tokens=0, completion_tokens=0), cached=False)


def tool_list(box: Toolbox) -> list[FunctionTool]:
    return [FunctionTool(f, description=f.__doc__ or "", name=f.__name__) for f in box.functions()]


async def agent(url: str, script: Sequence[CreateResult | str], *, name: str = "coder", session_id: str | None = None,
                iterations: int = 3, workbench: bool = False, meta: dict[str, str] | None = None) -> tuple[AssistantAgent, ReplayChatCompletionClient, Toolbox]:
    client = celguard.AsyncClient(url)
    session = await client.session(session_id or uuid.uuid4().hex, agent=celguard.Agent(name=name), meta=meta)
    await session.start_turn()
    provider = CelguardGuardrailProvider(session)
    tools = Toolbox()
    model = ReplayChatCompletionClient(list(script), model_info=INFO)
    if workbench:
        wb = GuardedWorkbench(StaticWorkbench(tool_list(tools)), provider, agent_name=name)
        a = AssistantAgent(name, model_client=model, workbench=wb, max_tool_iterations=iterations)
    else:
        guarded = [GuardedTool(t, provider, agent_name=name) for t in tool_list(tools)]
        a = AssistantAgent(name, model_client=model, tools=guarded, max_tool_iterations=iterations)  # type: ignore[arg-type]
    return a, model, tools


def results(r: TaskResult) -> list[tuple[str, bool]]:
    out = []
    for m in r.messages:
        if isinstance(m, ToolCallExecutionEvent):
            out.extend((x.content, x.is_error) for x in m.content)
    return out


def test_provider_is_the_protocol(url: str) -> None:
    assert issubclass(CelguardGuardrailProvider, GuardrailProvider)


async def test_provider_maps_verdicts(url: str) -> None:
    client = celguard.AsyncClient(url)
    s = await client.session()
    await s.start_turn()
    p = CelguardGuardrailProvider(s)
    r = await p.evaluate(tool_name="write_marker", args={"path": "/srv/app/rewrite", "content": "x"},
                         agent_name="a", call_id="c")
    assert r.decision == GuardrailAction.MODIFY and r.modified_args == {"path": "/srv/app/rewrite", "content": "sanitized"}
    r = await p.evaluate(tool_name="lookup", args={"query": "q"})
    assert r.decision == GuardrailAction.ALLOW and "STALE-DATA-WARNING" in r.metadata["warning"]
    r = await p.evaluate(tool_name="pay", args={})
    assert r.decision == GuardrailAction.DENY and r.metadata["ask"] is True
    approving = CelguardGuardrailProvider(s, approver=lambda d: True)
    assert (await approving.evaluate(tool_name="pay", args={})).decision == GuardrailAction.ALLOW
    r = await p.evaluate(tool_name="deploy", args={})
    assert r.decision == GuardrailAction.DENY and r.metadata["halt"] is True and r.metadata["code"] == "deploy_freeze"


async def test_blocked_tool_never_runs(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "blocked-marker"
    a, _, tools = await agent(url, [call("write_marker", {"path": str(marker), "content": "x"}), "done"])
    r = await a.run(task="write it")
    assert not marker.exists() and tools.ran == []
    [(text, is_error)] = results(r)
    assert is_error and "writing there is not allowed" in text and "blocked_path" in text


async def test_warn_reaches_the_model(url: str) -> None:
    a, model, tools = await agent(url, [call("lookup", {"query": "q"}), "done"])
    await a.run(task="look it up")
    assert tools.ran == [("lookup", {"query": "q"})]
    # the second model call reads the tool result with the warning
    assert "STALE-DATA-WARNING" in str(model.create_calls[1]["messages"])


async def test_halt_stops_the_turn(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "after-halt"
    a, _, tools = await agent(url, [call("deploy", {"target": "prod"}),
                                    call("write_marker", {"path": str(marker), "content": "x"}, "c2"), "done"])
    r = await a.run(task="deploy")
    assert tools.ran == [] and not marker.exists()
    texts = [t for t, _ in results(r)]
    assert "deploys are frozen" in texts[0] and "halted" in texts[1]


async def test_modify_changes_the_arguments(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "rewrite-marker"
    a, _, tools = await agent(url, [call("write_marker", {"path": str(marker), "content": "rm -rf /"}), "done"])
    await a.run(task="write")
    assert marker.read_text() == "sanitized"
    assert tools.ran == [("write_marker", {"path": str(marker), "content": "sanitized"})]


async def test_workbench_blocks_and_modifies(url: str, tmp_path: Path) -> None:
    blocked, rewrite = tmp_path / "blocked", tmp_path / "rewrite"
    a, model, tools = await agent(url, [call("write_marker", {"path": str(blocked), "content": "x"}),
                                        call("write_marker", {"path": str(rewrite), "content": "y"}, "c2"),
                                        call("lookup", {"query": "q"}, "c3"), "done"], workbench=True, iterations=4)
    await a.run(task="go")
    assert not blocked.exists() and rewrite.read_text() == "sanitized"
    assert [n for n, _ in tools.ran] == ["write_marker", "lookup"]
    assert "STALE-DATA-WARNING" in str(model.create_calls[3]["messages"])


async def test_rate_limit_holds_across_two_agents(url: str) -> None:
    sid = uuid.uuid4().hex
    a1, _, t1 = await agent(url, [call("send_email", {"to": "a"}), call("send_email", {"to": "b"}, "c2"), "done"],
                            name="first", session_id=sid)
    a2, _, t2 = await agent(url, [call("send_email", {"to": "c"}), "done"], name="second", session_id=sid)
    await a1.run(task="send two")
    r = await a2.run(task="send one more")
    assert len(t1.ran) == 2 and t2.ran == []
    assert "at most two emails" in results(r)[0][0]


async def test_repository_limit_holds_across_sessions(url: str) -> None:
    # two agents, each in a session of its own, in one repository: a counter
    # scoped to the repository (docs/store.md) counts both
    meta = {"repository": f"acme/{uuid.uuid4().hex}"}
    a1, _, t1 = await agent(url, [call("push", {"branch": "a"}), call("push", {"branch": "b"}, "c2"), "done"],
                            name="first", meta=meta)
    a2, _, t2 = await agent(url, [call("push", {"branch": "c"}), "done"], name="second", meta=meta)
    await a1.run(task="push two")
    r = await a2.run(task="push one more")
    assert len(t1.ran) == 2 and t2.ran == []
    assert "at most two pushes per repository" in results(r)[0][0]


async def team_agent(name: str, provider: CelguardGuardrailProvider, script: Sequence[CreateResult | str],
                     tools: Toolbox, iterations: int = 3) -> tuple[AssistantAgent, ReplayChatCompletionClient]:
    model = ReplayChatCompletionClient(list(script), model_info=INFO)
    wb = GuardedWorkbench(StaticWorkbench(tool_list(tools)), provider, agent_name=name)
    return AssistantAgent(name, model_client=provider.model_client(model), workbench=wb,
                          max_tool_iterations=iterations), model


async def test_halt_in_a_team_ends_its_run_with_the_reason(url: str, tmp_path: Path) -> None:
    provider = CelguardGuardrailProvider(await celguard.AsyncClient(url).session())
    box = Toolbox()
    marker = tmp_path / "after-halt"
    first, m1 = await team_agent("first", provider, [call("deploy", {"target": "prod"}),
                                                     call("lookup", {"query": "q"}, "c2"), "done"], box)
    second, m2 = await team_agent("second", provider, [call("write_marker", {"path": str(marker), "content": "x"}),
                                                       "done"], box)
    team = RoundRobinGroupChat([first, second], termination_condition=provider.termination() | MaxMessageTermination(8))
    r = await asyncio.wait_for(provider.run(team, task="ship it"), timeout=60)
    assert r.stop_reason is not None and "deploys are frozen" in r.stop_reason
    assert box.ran == [] and not marker.exists()
    # the halted agent's loop ended without calling its model again; the other never ran
    assert len(m1.create_calls) == 1 and len(m2.create_calls) == 0


async def test_other_agents_of_the_team_are_refused_for_the_rest_of_the_turn(url: str, tmp_path: Path) -> None:
    # Without the termination condition the team goes on: every later call
    # of the turn, of any agent, is refused, and the model is not called.
    provider = CelguardGuardrailProvider(await celguard.AsyncClient(url).session())
    box = Toolbox()
    marker = tmp_path / "after-halt"
    first, _ = await team_agent("first", provider, [call("deploy", {"target": "prod"}), "done"], box, iterations=1)
    second = AssistantAgent("second", model_client=ReplayChatCompletionClient(
        [call("write_marker", {"path": str(marker), "content": "x"}), "done"], model_info=INFO),
        workbench=GuardedWorkbench(StaticWorkbench(tool_list(box)), provider, agent_name="second"))
    team = RoundRobinGroupChat([first, second], termination_condition=MaxMessageTermination(4))
    r = await asyncio.wait_for(provider.run(team, task="ship it"), timeout=60)
    assert box.ran == [] and not marker.exists()
    assert any("halted" in t and "deploys are frozen" in t for t, _ in results(r))
    assert r.stop_reason is not None and "deploys are frozen" in r.stop_reason


async def test_a_single_agent_halt_returns_with_the_reason(url: str) -> None:
    provider = CelguardGuardrailProvider(await celguard.AsyncClient(url).session())
    box = Toolbox()
    a, model = await team_agent("solo", provider, [call("deploy", {"target": "prod"}),
                                                   call("lookup", {"query": "q"}, "c2"), "done"], box, iterations=5)
    r = await asyncio.wait_for(provider.run(a, task="deploy"), timeout=60)
    assert r.stop_reason is not None and "deploys are frozen" in r.stop_reason
    assert box.ran == [] and len(model.create_calls) == 1
    assert "deploys are frozen" in str(r.messages[-1].to_text())


async def test_two_runs_with_a_halt_in_the_first(url: str) -> None:
    # provider.run starts and ends a turn at each run: the halt of the first
    # run does not carry into the second.
    provider = CelguardGuardrailProvider(await celguard.AsyncClient(url).session())
    box = Toolbox()
    # (after the halt the model is not called: the replay's next answer is
    # the second run's first)
    a, _ = await team_agent("solo", provider, [call("deploy", {"target": "prod"}),
                                               call("lookup", {"query": "q"}, "c2"), "done"], box, iterations=2)
    r1 = await provider.run(a, task="deploy")
    assert r1.stop_reason is not None and "deploys are frozen" in r1.stop_reason
    r2 = await provider.run(a, task="look it up")
    assert r2.stop_reason is None and box.ran == [("lookup", {"query": "q"})]
    assert provider.halted is None


SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


async def test_model_answers_are_decided(url: str) -> None:
    provider = CelguardGuardrailProvider(await celguard.AsyncClient(url).session())
    for answer, expect in (("the SECRET-OUT is 42", "[withheld]"), ("fine answer", "fine answer"),
                           ("key " + SECRET, "key [REDACTED:github_token]")):
        a = AssistantAgent("a", model_client=provider.model_client(ReplayChatCompletionClient([answer], model_info=INFO)))
        r = await provider.run(a, task="tell")
        assert r.messages[-1].to_text() == expect
    a = AssistantAgent("a", model_client=provider.model_client(ReplayChatCompletionClient(["BAD-OUT"], model_info=INFO)))
    r = await provider.run(a, task="tell")
    assert "that answer is withheld" in r.messages[-1].to_text() and "BAD-OUT" not in str(r.messages[1:])


async def test_streamed_answer_is_decided_as_it_streams(url: str) -> None:
    # autogen-ext's OpenAI client streaming from the scripted server in
    # 5-character chunks: no chunk the agent streams holds the secret.
    from autogen_agentchat.messages import ModelClientStreamingChunkEvent
    from autogen_ext.models.openai import OpenAIChatCompletionClient
    from fakeopenai import FakeOpenAI, text

    provider = CelguardGuardrailProvider(await celguard.AsyncClient(url).session())
    answer = "the deploy key is " + SECRET + ", keep it"
    with FakeOpenAI([text(answer)], chunk_size=5) as fake:
        model = OpenAIChatCompletionClient(model="gpt-4o", base_url=fake.url, api_key="test")
        a = AssistantAgent("a", model_client=provider.model_client(model), model_client_stream=True)
        chunks: list[str] = []
        final: TaskResult | None = None
        async for item in provider.run_stream(a, task="the key?"):
            if isinstance(item, ModelClientStreamingChunkEvent):
                chunks.append(item.content)
            elif isinstance(item, TaskResult):
                final = item
    assert len(fake.sent_chunks) > 5 and fake.requests[0].get("stream") is True
    assert chunks and all(SECRET[:8] not in "".join(chunks[:i + 1]) for i in range(len(chunks)))
    redacted = answer.replace(SECRET, "[REDACTED:github_token]")
    assert final is not None and "".join(chunks) == redacted == final.messages[-1].to_text()
