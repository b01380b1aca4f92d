"""Hello world of celguard[openai-agents]: the SDK's Runner with its OpenAI
chat-completions model, a tool guarded by CelguardGuards."""

import asyncio

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from fakeopenai import FakeOpenAI, text, tool_call
from openai import AsyncOpenAI

import celguard
from celguard.openai_agents import CelguardGuards

set_tracing_disabled(True)
ran: list[str] = []


@function_tool
def write_marker(path: str, content: str) -> str:
    """Write a file."""
    ran.append(path)
    return "written"


async def main() -> None:
    with FakeOpenAI([tool_call("write_marker", {"path": "/srv/blocked/x", "content": "hi"}), text("done")]) as fake:
        guards = CelguardGuards(await celguard.AsyncClient().session())
        model = guards.model(OpenAIChatCompletionsModel(model="fake", openai_client=AsyncOpenAI(base_url=fake.url,
                                                                                              api_key="test")))
        agent = Agent(name="hello", model=model, tools=[guards.guard(write_marker)], hooks=guards.agent_hooks)
        result = await Runner.run(agent, "write")
        assert result.final_output == "done" and ran == [], result
        assert "writing there is not allowed" in str(fake.requests[1]["messages"])
        print("ok", celguard.__file__)


asyncio.run(main())
