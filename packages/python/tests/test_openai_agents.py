"""MnemoSession with the OpenAI Agents SDK itself (`openai-agents` from
PyPI): its Session protocol, and its Runner keeping a conversation in a
mnemo session log."""

from __future__ import annotations

import asyncio
import json

import pytest

from .conftest import KEYWORDS, require

require("agents", "openai-agents")

from agents import Agent, Runner, function_tool, set_tracing_disabled  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.memory import Session, SessionSettings  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from pymnemo import AsyncMemory, Memory  # noqa: E402
from pymnemo.openai_agents import MnemoSession, item_to_message, message_to_items  # noqa: E402

set_tracing_disabled(True)


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def amem_factory(workspace):
    def make():
        return AsyncMemory(workspace=workspace, settings=KEYWORDS)

    return make


ITEMS = [
    {"role": "user", "content": "What's the weather in Berlin?"},
    {"role": "developer", "content": "Answer in one line."},
    {"role": "system", "content": [{"type": "input_text", "text": "You are terse."}]},
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "And this picture?"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "low"},
        ],
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Look the weather up."}],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "weather",
        "arguments": '{"city": "Berlin"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21 °C"},
    {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": [{"type": "input_text", "text": "structured output"}],
    },
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Sunny, 21 °C.", "annotations": [], "logprobs": []}],
    },
    {"type": "item_reference", "id": "rs_0"},
]


def test_implements_the_sdk_protocol(workspace):
    with Memory(workspace=workspace, settings=KEYWORDS) as mem:
        s = MnemoSession("s1", mem)
        assert isinstance(s, Session)
        assert s.session_id == "s1" and s.key == "s1"
        assert isinstance(s.session_settings, SessionSettings)


def test_items_come_back_as_added(amem_factory):
    async def main():
        async with amem_factory() as mem:
            s = MnemoSession("round-trip", mem)
            assert await s.get_items() == []
            await s.add_items(ITEMS[:4])
            await s.add_items(ITEMS[4:])
            await s.add_items([])
            assert await s.get_items() == ITEMS
            assert await s.get_items(limit=2) == ITEMS[-2:]
            assert await s.get_items(limit=0) == []
            # One message per item, in the chat shape mnemo reads.
            log = await mem.session_history("round-trip")
            assert log["total"] == len(ITEMS)
            roles = [m["role"] for m in log["messages"]]
            assert roles == [
                "user",
                "system",
                "system",
                "user",
                "assistant",
                "assistant",
                "tool",
                "tool",
                "assistant",
                "assistant",
            ]
            call = log["messages"][5]
            assert call["tool_calls"][0]["function"] == {"name": "weather", "arguments": '{"city": "Berlin"}'}
            assert log["messages"][6]["tool_call_id"] == "call_1"
            # A plain user message needs nothing beside the chat shape.
            assert "openai_agents" not in log["messages"][0]
            # mnemo searches the conversation.
            hits = (await mem.search("weather Berlin"))["results"]
            assert any(h.get("session_key") == "round-trip" for h in hits)

    run(main())


def test_limit_from_session_settings(amem_factory):
    async def main():
        async with amem_factory() as mem:
            s = MnemoSession("limited", mem, session_settings=SessionSettings(limit=2))
            await s.add_items([{"role": "user", "content": f"m{i}"} for i in range(5)])
            assert [i["content"] for i in await s.get_items()] == ["m3", "m4"]
            assert len(await s.get_items(limit=4)) == 4
            d = MnemoSession("limited", mem, session_settings={"limit": 1})
            assert [i["content"] for i in await d.get_items()] == ["m4"]

    run(main())


def test_pop_and_clear_keep_the_log(amem_factory):
    async def main():
        async with amem_factory() as mem:
            s = MnemoSession("edits", mem)
            assert await s.pop_item() is None
            await s.clear_session()  # nothing to clear: nothing written
            assert (await mem.sessions())["sessions"] == []

            await s.add_items([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}])
            popped = await s.pop_item()
            assert popped == {"role": "assistant", "content": "two"}
            assert await s.get_items() == [{"role": "user", "content": "one"}]
            await s.add_items([{"role": "assistant", "content": "three"}])
            assert [i["content"] for i in await s.get_items()] == ["one", "three"]

            await s.clear_session()
            assert await s.get_items() == []
            await s.add_items([{"role": "user", "content": "afresh"}])
            assert await s.get_items() == [{"role": "user", "content": "afresh"}]

            # The log keeps every message, and says what was withdrawn.
            log = (await mem.session_history("edits"))["messages"]
            assert [m["content"] for m in log if m["role"] != "system"] == ["one", "two", "three", "afresh"]
            markers = [m["openai_agents"]["as"] for m in log if m["role"] == "system"]
            assert markers == ["pop", "clear"]

            # Another session object (another process) sees the same.
            again = MnemoSession("edits", mem)
            assert await again.get_items() == [{"role": "user", "content": "afresh"}]

    run(main())


def test_messages_written_by_others_are_items(amem_factory):
    async def main():
        async with amem_factory() as mem:
            await mem.append(
                "shared",
                [
                    {"role": "user", "content": "run ls"},
                    {
                        "role": "assistant",
                        "content": "Running it.",
                        "tool_calls": [
                            {"id": "c1", "type": "function", "function": {"name": "exec", "arguments": '{"cmd": "ls"}'}}
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c1", "name": "exec", "content": "a.txt"},
                    {"role": "assistant", "content": "One file: a.txt."},
                ],
            )
            items = await MnemoSession("shared", mem).get_items()
            assert items == [
                {"role": "user", "content": "run ls"},
                {"role": "assistant", "content": "Running it."},
                {"type": "function_call", "call_id": "c1", "name": "exec", "arguments": '{"cmd": "ls"}'},
                {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
                {"role": "assistant", "content": "One file: a.txt."},
            ]

    run(main())


def test_conversion_is_lossless_for_each_item():
    for item in ITEMS:
        msg = item_to_message(item)
        assert msg["role"] in ("user", "assistant", "system", "tool")
        json.dumps(msg)
        assert message_to_items(json.loads(json.dumps(msg))) == [item]


def test_sync_memory_works_too(workspace):
    with Memory(workspace=workspace, settings=KEYWORDS) as mem:
        s = MnemoSession("sync", mem, key="agents:sync")

        async def main():
            await s.add_items([{"role": "user", "content": "from a sync client"}])
            return await s.get_items()

        assert run(main()) == [{"role": "user", "content": "from a sync client"}]
        assert mem.session_history("agents:sync")["total"] == 1


class ScriptedModel(Model):
    """A model that asks for the weather tool, then answers with its result;
    it records what the Runner sent it (the session's history included)."""

    def __init__(self):
        self.inputs: list = []

    async def get_response(
        self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs
    ):
        self.inputs.append(input)
        last = input[-1] if isinstance(input, list) else {"role": "user", "content": input}
        n = len(self.inputs)
        if last.get("type") == "function_call_output":
            output = [
                ResponseOutputMessage(
                    id=f"msg_{n}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text=f"It is {last['output']}.", annotations=[])],
                )
            ]
        else:
            output = [
                ResponseFunctionToolCall(
                    id=f"fc_{n}",
                    type="function_call",
                    call_id=f"call_{n}",
                    name="weather",
                    arguments=json.dumps({"city": "Berlin"}),
                    status="completed",
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_runner_keeps_the_conversation_in_mnemo(amem_factory):
    async def main():
        async with amem_factory() as mem:
            model = ScriptedModel()
            agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=[weather])
            session = MnemoSession("user-42", mem)

            first = await Runner.run(agent, "What's the weather in Berlin?", session=session)
            assert first.final_output == "It is sunny in Berlin."
            items = await session.get_items()
            kinds = [i.get("type", "message") for i in items]
            assert kinds == ["message", "function_call", "function_call_output", "message"]

            second = await Runner.run(agent, "And tomorrow?", session=session)
            assert second.final_output == "It is sunny in Berlin."
            # The second run's first model call saw the first run's turn,
            # read back from mnemo.
            seen = model.inputs[2]
            assert seen[0] == {"role": "user", "content": "What's the weather in Berlin?"}
            assert seen[-1]["content"] == "And tomorrow?"
            assert len(await session.get_items()) == 8

            log = await mem.session_history("user-42")
            assert log["total"] == 8
            ctx = await mem.context("user-42")
            assert any("sunny in Berlin" in json.dumps(m) for m in ctx["messages"])

    run(main())
