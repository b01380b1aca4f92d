"""Hello world of celguard[prompty]: a .prompty file (a jinja2 template, the
openai provider) run by guardrails.turn."""

import tempfile
from pathlib import Path

from fakeopenai import FakeOpenAI, text, tool_call

import celguard
from celguard.prompty import CelguardGuardrails

PROMPTY = """---
name: hello
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
    description: Write a file.
    parameters:
      path: {{kind: string}}
      content: {{kind: string}}
---
system:
Use the tools.

user:
{{% if task %}}{{{{task}}}}{{% endif %}}
"""

ran: list[str] = []


def write_marker(path: str, content: str) -> str:
    ran.append(path)
    return "written"


with FakeOpenAI([tool_call("write_marker", {"path": "/srv/blocked/x", "content": "hi"}), text("done")]) as fake:
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "hello.prompty"
        f.write_text(PROMPTY.format(url=fake.url))
        guards = CelguardGuardrails(celguard.Client().session())
        out = guards.turn(str(f), {"task": "write it"}, tools={"write_marker": write_marker})
    assert out == "done" and ran == [], (out, ran)
    assert "write it" in str(fake.requests[0]["messages"]) and "writing there is not allowed" in str(fake.requests[1])
    print("ok", celguard.__file__)
