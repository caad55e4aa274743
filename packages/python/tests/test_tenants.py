"""A workspace of a multi-tenant server (`mnemo serve --database`): the
client under `/v1/workspaces/{id}`, with that workspace's token. Needs a
PostgreSQL server with pgvector: MNEMO_TEST_POSTGRES_URL, as the Rust
tests (scripts/postgres.sh starts one)."""

from __future__ import annotations

import json
import os
import secrets
import urllib.request

import pytest

import pymnemo
from pymnemo import AsyncMemory, Memory

from .conftest import require

DATABASE = os.environ.get("MNEMO_TEST_POSTGRES_URL")
if not DATABASE and not os.environ.get("CI"):
    pytest.skip("MNEMO_TEST_POSTGRES_URL is not set (scripts/postgres.sh start)", allow_module_level=True)


@pytest.fixture
def tenant(serve, workspace):
    assert DATABASE, "CI is set: MNEMO_TEST_POSTGRES_URL must name a PostgreSQL server (scripts/postgres.sh)"
    admin = secrets.token_hex(16)
    schema = "pymnemo_" + secrets.token_hex(4)
    s = serve(workspace, "--database", DATABASE, "--schema", schema, "--admin-token", admin)

    def admin_call(method, path, body=None):
        req = urllib.request.Request(
            s.url + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {admin}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"null")

    created = admin_call("POST", "/v1/workspaces", {"id": "alice"})
    yield s.url, created["token"]
    admin_call("DELETE", "/v1/workspaces/alice")


def test_a_tenant_workspace_by_url_or_id(tenant):
    base, token = tenant
    with Memory(url=f"{base}/v1/workspaces/alice", token=token) as mem:
        assert mem.url == f"{base}/v1/workspaces/alice"
        assert mem.health()["status"] == "ok"
        mem.append("chat", [{"role": "user", "content": "Alice keeps bees on the roof."}])
        assert mem.session_history("chat")["total"] == 1
        mem.write("Alice keeps bees.", name="Bees", type="user")
        assert "bees" in mem.get("memory/bees.md")["text"].lower()
        hits = mem.search("bees roof")["results"]
        assert hits
    with Memory(url=base, workspace_id="alice", token=token) as same:
        assert [s["key"] for s in same.sessions()["sessions"]] == ["chat"]


def test_tenant_tokens(tenant):
    base, token = tenant
    with pytest.raises(pymnemo.UnauthorizedError):
        Memory(url=f"{base}/v1/workspaces/alice").sessions()
    with pytest.raises(pymnemo.ForbiddenError) as e:
        Memory(url=f"{base}/v1/workspaces/alice", token="mnemo_" + "0" * 64).sessions()
    assert (e.value.code, e.value.status) == ("forbidden", 403)
    # Another workspace's name with alice's token: the same answer.
    with pytest.raises(pymnemo.ForbiddenError):
        Memory(url=base, workspace_id="bob", token=token).sessions()


def test_tenant_async_and_adapters(tenant):
    import asyncio

    base, token = tenant

    async def main():
        async with AsyncMemory(url=base, workspace_id="alice", token=token) as mem:
            await mem.write("Async tenant note about hives.")
            assert (await mem.search("hives"))["results"]

    asyncio.run(main())
    require("langgraph", "langgraph")
    from pymnemo.langgraph import MnemoStore

    with Memory(url=base, workspace_id="alice", token=token) as mem:
        store = MnemoStore(mem)
        store.put(("hives",), "north", {"text": "the north hive swarmed"})
        assert store.get(("hives",), "north").value == {"text": "the north hive swarmed"}
        assert [i.key for i in store.search(("hives",), query="swarmed")] == ["north"]
