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


SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
STREAMING = PROMPTY.replace("  apiType: chat\n", "  apiType: chat\n  options:\n    additionalProperties:\n      stream: true\n")


def prompty_file(tmp_path: Path, fake: FakeOpenAI, template: str = PROMPTY) -> Path:
    f = tmp_path / f"{uuid.uuid4().hex}.prompty"
    f.write_text(template.format(url=fake.url))
    return f


def test_streamed_answer_is_decided_as_it_streams(url: str, tmp_path: Path) -> None:
    answer = "the key is " + SECRET + ", keep it"
    tokens: list[str] = []
    guards = CelguardGuardrails(celguard.Client(url).session())
    with FakeOpenAI([text(answer)], chunk_size=5) as fake:
        out = guards.turn(str(prompty_file(tmp_path, fake, STREAMING)), {"task": "key?"},
                          tools={f.__name__: f for f in Toolbox().functions()},
                          on_event=lambda kind, data: tokens.append(data["token"]) if kind == "token" else None)
    assert fake.requests[0].get("stream") is True and len(fake.sent_chunks) > 5
    assert SECRET[:8] not in "".join(tokens) and "[REDACTED:github_token]" in "".join(tokens)
    assert out == "".join(tokens) == answer.replace(SECRET, "[REDACTED:github_token]")


def test_streamed_block_ends_the_tokens_with_the_refusal(url: str, tmp_path: Path) -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    guards = CelguardGuardrails(celguard.Client(url).session())
    with FakeOpenAI([text("here: BAD-OUT and the rest")], chunk_size=4) as fake:
        with pytest.raises(GuardrailError, match="that answer is withheld"):
            guards.turn(str(prompty_file(tmp_path, fake, STREAMING)), {"task": "go"},
                        tools={f.__name__: f for f in Toolbox().functions()},
                        on_event=lambda kind, data: events.append((kind, data)))
    assert "BAD-OUT" not in str(events), [(k, str(d)[:300]) for k, d in events if "BAD-OUT" in str(d)]
    assert "that answer is withheld" in "".join(d["token"] for k, d in events if k == "token")


def test_a_callback_not_wrapped_is_refused_before_the_model(url: str, tmp_path: Path) -> None:
    guards = CelguardGuardrails(celguard.Client(url).session())
    with FakeOpenAI([text("the key is " + SECRET)]) as fake:
        with pytest.raises(GuardrailError, match="unguarded_stream"):
            prompty.turn(str(prompty_file(tmp_path, fake, STREAMING)), {"task": "go"},
                         tools={f.__name__: f for f in Toolbox().functions()}, guardrails=guards,
                         on_event=lambda kind, data: None)
    assert fake.requests == []


@pytest.mark.parametrize("direct", [True, False], ids=["prompty.turn", "guardrails.turn"])
def test_two_runs_with_a_halt_in_the_first(url: str, tmp_path: Path, direct: bool) -> None:
    guards = CelguardGuardrails(celguard.Client(url).session())
    box = Toolbox()
    tools = {f.__name__: f for f in box.functions()}
    with FakeOpenAI([tool_call("deploy", {"target": "prod"}), tool_call("lookup", {"query": "q"}, "c2"),
                     text("done")]) as fake:
        f = str(prompty_file(tmp_path, fake))
        run = (lambda: prompty.turn(f, {"task": "go"}, tools=tools, guardrails=guards)) if direct else \
            (lambda: guards.turn(f, {"task": "go"}, tools=tools))
        with pytest.raises(GuardrailError, match="deploys are frozen"):
            run()
        assert run() == "done"
    assert box.ran == [("lookup", {"query": "q"})]
