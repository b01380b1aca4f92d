"""Hello world of celguard[autogen]: AssistantAgent with autogen-ext's OpenAI
model client, a tool guarded by GuardedTool."""

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_core.tools import FunctionTool
from autogen_ext.models.openai import OpenAIChatCompletionClient
from fakeopenai import FakeOpenAI, text, tool_call

import celguard
from celguard.autogen import CelguardGuardrailProvider, GuardedTool

ran: list[str] = []


def write_marker(path: str, content: str) -> str:
    """Write a file."""
    ran.append(path)
    return "written"


async def main() -> None:
    with FakeOpenAI([tool_call("write_marker", {"path": "/srv/blocked/x", "content": "hi"}), text("done")]) as fake:
        provider = CelguardGuardrailProvider(await celguard.AsyncClient().session())
        model = OpenAIChatCompletionClient(model="gpt-4o", base_url=fake.url, api_key="test")
        agent = AssistantAgent("hello", model_client=provider.model_client(model),
                               tools=[GuardedTool(FunctionTool(write_marker, description="Write a file."), provider)])
        result = await provider.run(agent, task="write")
        assert ran == [] and "writing there is not allowed" in str(result.messages), result
        print("ok", celguard.__file__)


asyncio.run(main())
