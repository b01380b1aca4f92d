"""Prompty: prompty.turn's own agent loop with its openai provider talking to
a scripted OpenAI server on 127.0.0.1, guarded by CelguardGuardrails, against
celguard serve."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import prompty
import pytest
from prompty import GuardrailError

import celguard
from toolbox import Toolbox
from celguard.prompty import CelguardGuardrails
from fakeopenai import FakeOpenAI, text, tool_call

PROMPTY = """---
name: guarded
model:
  id: fake
  provider: openai
  apiType: chat
  connection:
    kind: key
    endpoint: {url}
    apiKey: test
tools:
  - name: write_marker
    kind: function
    description: Write content to a file.
    parameters:
      path: {{kind: string}}
      content: {{kind: string}}
  - name: lookup
    kind: function
    description: Look something up.
    parameters:
      query: {{kind: string}}
  - name: deploy
    kind: function
    description: Deploy.
    parameters:
      target: {{kind: string}}
  - name: send_email
    kind: function
    description: Send an email.
    parameters:
      to: {{kind: string}}
---
system:
Use the tools.

user:
{{{{task}}}}
"""


def run(url: str, fake: FakeOpenAI, tmp_path: Path, *, session_id: str | None = None,
        name: str = "coder") -> tuple[Any, Toolbox, CelguardGuardrails]:
    client = celguard.Client(url)
    session = client.session(session_id or uuid.uuid4().hex, agent=celguard.Agent(name=name))
    session.start_turn()
    guards = CelguardGuardrails(session)
    tools = Toolbox()
    f = tmp_path / f"{uuid.uuid4().hex}.prompty"
    f.write_text(PROMPTY.format(url=fake.url))
    out = prompty.turn(str(f), {"task": "go"}, tools={f.__name__: f for f in tools.functions()}, guardrails=guards)
    return out, tools, guards


def test_blocked_tool_never_runs(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "blocked-marker"
    with FakeOpenAI([tool_call("write_marker", {"path": str(marker), "content": "x"}), text("done")]) as fake:
        out, tools, _ = run(url, fake, tmp_path)
    assert out == "done" and not marker.exists() and tools.ran == []
    assert "writing there is not allowed" in str(fake.requests[1]["messages"])


def test_warn_reaches_the_model(url: str, tmp_path: Path) -> None:
    with FakeOpenAI([tool_call("lookup", {"query": "q"}), text("done")]) as fake:
        _, tools, guards = run(url, fake, tmp_path)
    assert tools.ran == [("lookup", {"query": "q"})]
    assert "STALE-DATA-WARNING" in str(fake.requests[1]["messages"])
    assert len(guards.warnings) == 1


def test_halt_stops_the_turn(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "after-halt"
    with FakeOpenAI([tool_call("deploy", {"target": "prod"}),
                     tool_call("write_marker", {"path": str(marker), "content": "x"}), text("done")]) as fake:
        with pytest.raises(GuardrailError, match="deploys are frozen"):
            run(url, fake, tmp_path)
    assert not marker.exists() and len(fake.requests) == 1


def test_modify_changes_the_arguments(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "rewrite-marker"
    with FakeOpenAI([tool_call("write_marker", {"path": str(marker), "content": "rm -rf /"}), text("done")]) as fake:
        _, tools, _ = run(url, fake, tmp_path)
    assert marker.read_text() == "sanitized"
    assert tools.ran == [("write_marker", {"path": str(marker), "content": "sanitized"})]


def test_rate_limit_holds_across_two_agents(url: str, tmp_path: Path) -> None:
    sid = uuid.uuid4().hex
    with FakeOpenAI([tool_call("send_email", {"to": "a"}), tool_call("send_email", {"to": "b"}, "c2"), text("ok"),
                     tool_call("send_email", {"to": "c"}, "c3"), text("ok")]) as fake:
        _, t1, _ = run(url, fake, tmp_path, session_id=sid, name="first")
        _, t2, _ = run(url, fake, tmp_path, session_id=sid, name="second")
    assert len(t1.ran) == 2 and t2.ran == []
    assert "at most two emails" in str(fake.requests[-1]["messages"])


def run_task(url: str, fake: FakeOpenAI, tmp_path: Path, task: str) -> Any:
    session = celguard.Client(url).session()
    session.start_turn()
    f = tmp_path / f"{uuid.uuid4().hex}.prompty"
    f.write_text(PROMPTY.format(url=fake.url))
    return prompty.turn(str(f), {"task": task}, tools={f.__name__: f for f in Toolbox().functions()}, guardrails=CelguardGuardrails(session))


def test_input_block_stops_before_the_model(url: str, tmp_path: Path) -> None:
    with FakeOpenAI([text("never")]) as fake:
        with pytest.raises(GuardrailError, match="that prompt is not allowed"):
            run_task(url, fake, tmp_path, "FORBIDDEN-PROMPT please")
    assert fake.requests == []


def test_input_modify_rewrites_the_messages(url: str, tmp_path: Path) -> None:
    with FakeOpenAI([text("done")]) as fake:
        assert run_task(url, fake, tmp_path, "secret MASK-ME here") == "done"
    sent = str(fake.requests[0]["messages"])
    assert "[masked]" in sent and "MASK-ME" not in sent


def test_output_modify_and_block(url: str, tmp_path: Path) -> None:
    with FakeOpenAI([text("the SECRET-OUT is 42")]) as fake:
        assert run_task(url, fake, tmp_path, "go") == "[withheld]"
    with FakeOpenAI([text("BAD-OUT")]) as fake:
        with pytest.raises(GuardrailError, match="that answer is withheld"):
            run_task(url, fake, tmp_path, "go")


def test_ask_needs_the_approver(url: str) -> None:
    session = celguard.Client(url).session()
    session.start_turn()
    assert not CelguardGuardrails(session).check_tool("pay", {"amount": 5}).allowed
    seen: list[celguard.Decision] = []
    approving = CelguardGuardrails(session, approver=lambda d: seen.append(d) is None)
    assert approving.check_tool("pay", {"amount": 5}).allowed and seen[0].verdict == "ask"
    raising = CelguardGuardrails(session, approver=lambda d: 1 / 0 == 0)
    assert not raising.check_tool("pay", {"amount": 5}).allowed
