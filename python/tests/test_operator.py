"""Operator (operator-use): the Agent's own loop with its ChatOpenAI provider
talking to a scripted OpenAI server on 127.0.0.1, guarded by CelguardPlugin,
against celguard serve."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Callable

from operator_use.agent import Agent
from operator_use.messages import HumanMessage, ToolMessage
from operator_use.plugins import Plugin
from operator_use.providers.openai import ChatOpenAI
from operator_use.tools import Tool
from pydantic import BaseModel

import celguard
from toolbox import Toolbox
from celguard.operator_use import CelguardPlugin
from fakeopenai import FakeOpenAI, text, tool_call


class WriteArgs(BaseModel):
    path: str
    content: str


class QueryArgs(BaseModel):
    query: str


class TargetArgs(BaseModel):
    target: str


class ToArgs(BaseModel):
    to: str


class NoArgs(BaseModel):
    pass


class BranchArgs(BaseModel):
    branch: str


MODELS: dict[str, type[BaseModel]] = {"write_marker": WriteArgs, "lookup": QueryArgs, "deploy": TargetArgs,
                                      "send_email": ToArgs, "read_secret": NoArgs, "push": BranchArgs}


class Tools(Plugin):
    """The test's tools, as an Operator plugin; ran records what really ran."""

    name = "test-tools"

    def __init__(self) -> None:
        self.box = Toolbox()
        self.ran = self.box.ran

    def get_tools(self) -> list[Tool]:
        def wrap(f: Callable[..., str]) -> Tool:
            model = MODELS[f.__name__]

            def run(**kw: Any) -> str:  # Operator passes its extensions (_workspace, ...) too
                return f(**{k: kw[k] for k in model.model_fields})

            return Tool(name=f.__name__, description=f.__doc__, model=model)(run)

        return [wrap(f) for f in self.box.functions()]


def make(url: str, fake: FakeOpenAI, tmp_path: Path, name: str = "operator") -> tuple[Agent, Tools]:
    tools = Tools()
    guard = CelguardPlugin(celguard.AsyncClient(url), agent=celguard.Agent(name=name))
    llm = ChatOpenAI(model="fake", api_key="test", base_url=fake.url, max_retries=0)
    ws = tmp_path / f"ws-{uuid.uuid4().hex[:8]}"
    ws.mkdir()
    return Agent(llm=llm, workspace=ws, plugins=[tools, guard]), tools


async def ask(agent: Agent, task: str, session_id: str | None = None) -> str:
    out = await agent.run(HumanMessage(content=task), session_id=session_id or uuid.uuid4().hex)
    return str(out.content)


async def test_blocked_tool_never_runs(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "blocked-marker"
    with FakeOpenAI([tool_call("write_marker", {"path": str(marker), "content": "x"}), text("done")]) as fake:
        a, tools = make(url, fake, tmp_path)
        assert await ask(a, "write it") == "done"
    assert not marker.exists() and tools.ran == []
    assert "writing there is not allowed" in str(fake.requests[1]["messages"])


async def test_warn_reaches_the_model(url: str, tmp_path: Path) -> None:
    with FakeOpenAI([tool_call("lookup", {"query": "q"}), text("done")]) as fake:
        a, tools = make(url, fake, tmp_path)
        await ask(a, "look")
    assert tools.ran == [("lookup", {"query": "q"})]
    sent = str(fake.requests[1]["messages"])
    assert "result for q" in sent and "STALE-DATA-WARNING" in sent


async def test_halt_stops_the_turn(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "after-halt"
    with FakeOpenAI([tool_call("deploy", {"target": "prod"}),
                     tool_call("write_marker", {"path": str(marker), "content": "x"}), text("done")]) as fake:
        a, tools = make(url, fake, tmp_path)
        answer = await ask(a, "deploy")
    assert tools.ran == [] and not marker.exists() and len(fake.requests) == 1
    assert "halted" in answer and "deploys are frozen" in answer


async def test_modify_changes_the_arguments(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "rewrite-marker"
    with FakeOpenAI([tool_call("write_marker", {"path": str(marker), "content": "rm -rf /"}), text("done")]) as fake:
        a, tools = make(url, fake, tmp_path)
        await ask(a, "write")
    assert marker.read_text() == "sanitized"
    assert tools.ran == [("write_marker", {"path": str(marker), "content": "sanitized"})]


async def test_after_modify_replaces_what_the_model_reads(url: str, tmp_path: Path) -> None:
    with FakeOpenAI([tool_call("read_secret", {}), text("done")]) as fake:
        a, tools = make(url, fake, tmp_path)
        await ask(a, "read")
    sent = str(fake.requests[1]["messages"])
    assert tools.ran == [("read_secret", {})] and "[redacted]" in sent and "hunter2" not in sent


async def test_output_phase_rewrites_the_answer(url: str, tmp_path: Path) -> None:
    with FakeOpenAI([text("the SECRET-OUT is 42")]) as fake:
        a, _ = make(url, fake, tmp_path)
        assert await ask(a, "tell") == "[withheld]"


async def test_rate_limit_holds_across_two_agents(url: str, tmp_path: Path) -> None:
    sid = uuid.uuid4().hex
    with FakeOpenAI([tool_call("send_email", {"to": "a"}), tool_call("send_email", {"to": "b"}, "c2"), text("ok"),
                     tool_call("send_email", {"to": "c"}, "c3"), text("ok")]) as fake:
        a1, t1 = make(url, fake, tmp_path, "first")
        a2, t2 = make(url, fake, tmp_path, "second")
        await ask(a1, "send two", sid)
        await ask(a2, "send one more", sid)
    assert len(t1.ran) == 2 and t2.ran == []
    assert "at most two emails" in str(fake.requests[-1]["messages"])


def test_tool_message_type() -> None:
    # the plugin rewrites Operator's ToolMessage in place; keep the field it uses
    assert "content" in ToolMessage.model_fields


async def test_ask_needs_the_approver(url: str) -> None:
    from operator_use.agent.hooks import HookEvent, Hooks
    from operator_use.agent.hooks.events import BeforeToolCallContext
    from operator_use.providers.events import ToolCall
    from operator_use.session import Session

    async def yes(d: celguard.Decision) -> bool:
        return d.verdict == "ask"

    for approver, skipped in ((None, True), (yes, False)):
        hooks = Hooks()
        CelguardPlugin(celguard.AsyncClient(url), approver=approver).register_hooks(hooks)
        ctx = BeforeToolCallContext(session=Session(id=uuid.uuid4().hex),
                                    tool_call=ToolCall(id="c1", name="pay", params={"amount": 5}))
        await hooks.emit(HookEvent.BEFORE_TOOL_CALL, ctx)
        assert ctx.skip is skipped


async def test_unreachable_service_refuses(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with FakeOpenAI([tool_call("write_marker", {"path": str(marker), "content": "x"}), text("done")]) as fake:
        a, tools = make("http://127.0.0.1:9", fake, tmp_path)
        await ask(a, "write")
    assert not marker.exists() and tools.ran == []
    assert "service_unavailable" in str(fake.requests[1]["messages"])


SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


async def run_streamed(agent: Agent, task: str) -> tuple[str, list[tuple[str, bool]]]:
    published: list[tuple[str, bool]] = []

    async def publish(content: str, is_final: bool, init: bool = False) -> None:
        published.append((content, is_final))

    out = await agent.run(HumanMessage(content=task), session_id=uuid.uuid4().hex, publish_stream=publish)
    return str(out.content), published


async def test_streamed_answer_is_decided_as_it_streams(url: str, tmp_path: Path) -> None:
    # publish_stream (how Operator's chat channels run) never sees the
    # secret, though the model sends it split across 5-character chunks.
    answer = "the deploy key is " + SECRET + ", keep it safe"
    with FakeOpenAI([tool_call("lookup", {"query": "key"}), text(answer)], chunk_size=5) as fake:
        a, tools = make(url, fake, tmp_path)
        final, published = await run_streamed(a, "what is the key?")
    assert fake.requests[-1].get("stream") is True and len(fake.sent_chunks) > 10
    assert tools.ran == [("lookup", {"query": "key"})]
    assert published and published[-1][1] is True
    for content, _ in published:
        assert SECRET[:8] not in content
    assert final == published[-1][0] == answer.replace(SECRET, "[REDACTED:github_token]")


async def test_streamed_block_ends_with_the_refusal(url: str, tmp_path: Path) -> None:
    with FakeOpenAI([text("here it comes: BAD-OUT, all of it")], chunk_size=4) as fake:
        a, _ = make(url, fake, tmp_path)
        final, published = await run_streamed(a, "tell")
    assert all("BAD-OUT" not in c for c, _ in published)
    assert "that answer is withheld" in final and final == published[-1][0]


async def test_streamed_text_is_released_before_the_end(url: str, tmp_path: Path) -> None:
    # With a holdback shorter than the answer, decided text is published
    # while the model still streams; the secret is still never published.
    answer = ("word " * 40) + SECRET + (" more" * 40)
    with FakeOpenAI([text(answer)], chunk_size=6) as fake:
        tools = Tools()
        guard = CelguardPlugin(celguard.AsyncClient(url), holdback=64)
        llm = ChatOpenAI(model="fake", api_key="test", base_url=fake.url, max_retries=0)
        ws = tmp_path / "ws-holdback"
        ws.mkdir()
        a = Agent(llm=llm, workspace=ws, plugins=[tools, guard])
        final, published = await run_streamed(a, "tell")
    partial = [c for c, final_ in published if not final_]
    assert partial and all(SECRET[:8] not in c for c, _ in published)
    assert final == answer.replace(SECRET, "[REDACTED:github_token]")
