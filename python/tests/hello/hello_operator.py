"""Hello world of celguard[operator]: Operator's Agent with its OpenAI
provider, guarded by CelguardPlugin."""

import asyncio
import tempfile
from pathlib import Path

from fakeopenai import FakeOpenAI, text, tool_call
from operator_use.agent import Agent
from operator_use.messages import HumanMessage
from operator_use.plugins import Plugin
from operator_use.providers.openai import ChatOpenAI
from operator_use.tools import Tool
from pydantic import BaseModel

import celguard
from celguard.operator_use import CelguardPlugin

ran: list[str] = []


class WriteArgs(BaseModel):
    path: str
    content: str


class Tools(Plugin):
    name = "hello-tools"

    def get_tools(self) -> list[Tool]:
        def write_marker(path: str, content: str, **_: object) -> str:
            ran.append(path)
            return "written"

        return [Tool(name="write_marker", description="Write a file.", model=WriteArgs)(write_marker)]


async def main() -> None:
    with FakeOpenAI([tool_call("write_marker", {"path": "/srv/blocked/x", "content": "hi"}), text("done")]) as fake:
        llm = ChatOpenAI(model="fake", api_key="test", base_url=fake.url, max_retries=0)
        with tempfile.TemporaryDirectory() as ws:
            agent = Agent(llm=llm, workspace=Path(ws), plugins=[Tools(), CelguardPlugin(celguard.AsyncClient())])
            out = await agent.run(HumanMessage(content="write"), session_id="hello")
        assert ran == [] and "writing there is not allowed" in str(fake.requests[1]["messages"]), fake.requests
        print("ok", out.content, celguard.__file__)


asyncio.run(main())
