"""AsyncMemory: the asyncio client, against a real server."""

from __future__ import annotations

import asyncio

import pytest

import pymnemo
from pymnemo import AsyncMemory

from .conftest import KEYWORDS


def run(coro):
    return asyncio.run(coro)


def test_every_operation(workspace):
    async def main():
        async with AsyncMemory(workspace=workspace, settings=KEYWORDS) as mem:
            assert (await mem.health())["status"] == "ok"
            out = await mem.append("web:1", [{"role": "user", "content": "My cat is called Miso."}])
            assert out["messages"] == 1
            await mem.append("web:1", {"role": "assistant", "content": "Hello Miso!"})
            log = await mem.session_history("web:1")
            assert [m["content"] for m in log["messages"]] == ["My cat is called Miso.", "Hello Miso!"]
            assert (await mem.session_history("web:1", since_cursor=True))["total"] == 2
            assert [s["key"] for s in (await mem.sessions())["sessions"]] == ["web:1"]
            ctx = await mem.context("web:1", "what is my cat called?")
            assert isinstance(ctx["notes"], list)
            assert (await mem.memory_work("web:1"))["state"] == "idle"

            w = await mem.write("The cat Miso is ginger.")
            assert w["mode"] == "daily"
            hits = (await mem.search("Miso ginger", max_results=3))["results"]
            assert hits and any("ginger" in h["snippet"] for h in hits)
            got = await mem.get(hits[0]["citation"])
            assert got["text"]
            assert (await mem.get("MEMORY.md", from_line=1, lines=1))["from"] == 1

            t = await mem.write("Ginger cat", name="Miso", type="user")
            assert t["action"] == "created"
            assert (await mem.history("Miso"))["changes"][0]["op"] == "write"
            assert (await mem.forget("Miso"))["removed"] == "memory/miso.md"
            assert (await mem.dream())["changed"] is False
            view = await mem.inspect_memory()
            assert "memory_md" in view

            for call in (
                mem.consolidate("web:1"),
                mem.compact("web:1", level=5),
                mem.close_session("web:1"),
                mem.turn("web:1", "hi"),
            ):
                with pytest.raises(pymnemo.NotConfiguredError):
                    await call
            with pytest.raises(pymnemo.NotFoundError) as e:
                await mem.undo("dream")
            assert e.value.code == "not_found" and e.value.__cause__ is None
            with pytest.raises(pymnemo.InvalidInputError):
                await mem.search("x", max_results=1000)

    run(main())


def test_concurrent_requests_use_their_own_connections(workspace):
    async def main():
        async with AsyncMemory(workspace=workspace, settings=KEYWORDS) as mem:
            await mem.write("Parallel facts about otters.")
            answers = await asyncio.gather(*(mem.search("otters") for _ in range(25)))
            assert all(a["results"] for a in answers)
            assert 1 <= len(mem._transport._idle) <= 8
            # Appends in parallel all land.
            await asyncio.gather(*(mem.append("par", [{"role": "user", "content": f"m{i}"}]) for i in range(10)))
            assert (await mem.session_history("par"))["total"] == 10

    run(main())


def test_one_client_across_event_loops(workspace):
    mem = AsyncMemory(workspace=workspace, settings=KEYWORDS)
    try:
        assert run(mem.health())["status"] == "ok"
        # A second loop: the first one's pooled connection is not reused.
        assert run(mem.sessions()) == {"sessions": []}
    finally:
        run(mem.aclose())


def test_async_errors(workspace):
    async def main():
        async with AsyncMemory(url="http://127.0.0.1:9") as dead:
            with pytest.raises(pymnemo.ConnectionFailedError):
                await dead.health()
        async with AsyncMemory(workspace=workspace, settings=KEYWORDS, token="t0ken") as owner:
            async with AsyncMemory(url=owner.url, token="nope") as wrong:
                with pytest.raises(pymnemo.UnauthorizedError):
                    await wrong.sessions()

    run(main())


def test_server_start_error_in_async(workspace):
    workspace.mkdir(parents=True)
    (workspace / "mnemo.toml").write_text("not = [valid")
    with pytest.raises(pymnemo.ServerStartError) as e:
        AsyncMemory(workspace=workspace, settings=KEYWORDS)
    assert e.value.code == "config"


def test_timeout(workspace):
    async def main():
        async with AsyncMemory(workspace=workspace, settings=KEYWORDS, timeout=5) as mem:
            assert (await mem.health())["status"] == "ok"

    run(main())
