"""MnemoStore with LangGraph itself (the `langgraph` package from PyPI)."""

from __future__ import annotations

import asyncio
import time
from typing import TypedDict

import pytest

from .conftest import KEYWORDS, require

require("langgraph", "langgraph")

from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

import pymnemo  # noqa: E402
from pymnemo import AsyncMemory, Memory  # noqa: E402
from pymnemo.langgraph import MnemoStore  # noqa: E402


@pytest.fixture
def store(mem):
    return MnemoStore(mem)


def test_is_a_base_store(store):
    assert isinstance(store, BaseStore)
    assert store.supports_ttl is False


def test_put_get_update_delete(store, mem):
    ns = ("memories", "alice")
    assert store.get(ns, "tea") is None
    store.put(ns, "tea", {"text": "Alice likes green tea", "strength": 3})
    item = store.get(ns, "tea")
    assert isinstance(item, Item)
    assert (item.namespace, item.key) == (ns, "tea")
    assert item.value == {"text": "Alice likes green tea", "strength": 3}
    assert item.created_at == item.updated_at and item.created_at.tzinfo is not None

    time.sleep(0.01)
    store.put(ns, "tea", {"text": "Alice now likes black tea", "strength": 5})
    updated = store.get(ns, "tea")
    assert updated.value["text"] == "Alice now likes black tea"
    assert updated.created_at == item.created_at and updated.updated_at > item.updated_at

    # Keys and namespaces that differ only in case, or hold any character,
    # are different items.
    store.put(("memories", "Alice"), "tea", {"text": "the other Alice"})
    store.put(ns, "Tea/☕ #1", {"text": "odd key"})
    assert store.get(ns, "tea").value["text"] == "Alice now likes black tea"
    assert store.get(("memories", "Alice"), "tea").value == {"text": "the other Alice"}
    assert store.get(ns, "Tea/☕ #1").value == {"text": "odd key"}

    store.delete(ns, "tea")
    assert store.get(ns, "tea") is None
    store.delete(ns, "tea")  # deleting what is gone is fine
    assert store.get(("memories", "Alice"), "tea") is not None


def test_items_are_mnemo_memory(store, mem):
    """What the graph stores, mnemo's own search and MEMORY.md see."""
    store.put(("users", "ada"), "lang", {"text": "Ada writes Rust every day"})
    hits = mem.search("Ada writes Rust")["results"]
    assert any(h["path"].startswith("memory/lg-users-ada-lang-") for h in hits)
    memory_md = mem.get("MEMORY.md")["text"]
    assert "users/ada/lang: Ada writes Rust every day" in memory_md
    name = store.name_of(("users", "ada"), "lang")
    history = mem.history(name)["changes"]
    assert [c["op"] for c in history] == ["write"]
    store.delete(("users", "ada"), "lang")
    assert [c["op"] for c in mem.history(name)["changes"]] == ["write", "forget"]


def test_search_with_query_filter_and_paging(store):
    store.put(("docs", "a"), "1", {"text": "how to brew green tea", "kind": "howto", "stars": 4})
    store.put(("docs", "a"), "2", {"text": "green tea and matcha history", "kind": "essay", "stars": 2})
    store.put(("docs", "b"), "3", {"text": "coffee brewing guide", "kind": "howto", "stars": 5})
    store.put(("other",), "4", {"text": "green tea outside docs"})

    hits = store.search(("docs",), query="green tea")
    assert {h.key for h in hits} == {"1", "2"}
    assert all(isinstance(h, SearchItem) and h.score is not None for h in hits)
    assert hits == sorted(hits, key=lambda h: -h.score)

    assert [h.key for h in store.search(("docs",), query="green tea", filter={"kind": "howto"})] == ["1"]
    assert store.search(("docs", "b"), query="green tea") == []
    assert len(store.search(("docs",), query="green tea", limit=1)) == 1

    # Without a query: every item under the prefix, newest first, filtered.
    listed = store.search(("docs",))
    assert [h.key for h in listed] == ["3", "2", "1"] and all(h.score is None for h in listed)
    assert [h.key for h in store.search(("docs",), filter={"stars": {"$gte": 4}})] == ["3", "1"]
    assert [h.key for h in store.search(("docs",), filter={"stars": {"$lt": 3}})] == ["2"]
    assert [h.key for h in store.search(("docs",), filter={"kind": {"$ne": "howto"}})] == ["2"]
    assert [h.key for h in store.search(("docs",), limit=1, offset=1)] == ["2"]
    assert {h.key for h in store.search(())} == {"1", "2", "3", "4"}


def test_list_namespaces(store):
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c")]
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "e")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("x", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [("a", "b", "c"), ("a", "b", "d"), ("x", "b", "c")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("x",)]
    assert store.list_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "e")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "e")]


def test_batch_of_every_op(store):
    results = store.batch(
        [
            PutOp(("n",), "k1", {"text": "first"}),
            PutOp(("n",), "k2", {"text": "second"}),
            GetOp(("n",), "k1"),
            SearchOp(("n",), query="second"),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("n",)),)),
            PutOp(("n",), "k1", None),
            GetOp(("n",), "k1"),
        ]
    )
    assert results[0] is None and results[1] is None
    assert results[2].value == {"text": "first"}
    assert [i.key for i in results[3]] == ["k2"]
    assert results[4] == [("n",)]
    assert results[5] is None and results[6] is None


def test_namespace_rules_are_langgraphs(store):
    with pytest.raises(InvalidNamespaceError):
        store.put(("bad.label",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})
    with pytest.raises(NotImplementedError):
        store.put(("n",), "k", {"v": 1}, ttl=5)


def test_async_interface_with_either_client(workspace):
    async def exercise(store):
        await store.aput(("async",), "k", {"text": "written asynchronously"})
        got = await store.aget(("async",), "k")
        assert got.value == {"text": "written asynchronously"}
        found = await store.asearch(("async",), query="asynchronously")
        assert [i.key for i in found] == ["k"]
        assert await store.alist_namespaces() == [("async",)]
        await store.adelete(("async",), "k")
        assert await store.aget(("async",), "k") is None

    with Memory(workspace=workspace, settings=KEYWORDS) as mem:
        store = MnemoStore(mem)
        asyncio.run(exercise(store))
        asyncio.run(store.aclose())

    async def with_async_client():
        async with AsyncMemory(workspace=workspace, settings=KEYWORDS) as amem:
            store = MnemoStore(amem)
            await exercise(store)
            # The sync interface works on an AsyncMemory too.
            await asyncio.to_thread(store.put, ("sync",), "k", {"text": "from a thread"})
            assert (await asyncio.to_thread(store.get, ("sync",), "k")).value == {"text": "from a thread"}
            store.close()

    asyncio.run(with_async_client())


def test_memory_type_and_prefix(mem):
    store = MnemoStore(mem, memory_type=lambda ns: "project" if ns[0] == "work" else "user", prefix="graph")
    store.put(("work",), "deadline", {"text": "ship on Friday"})
    store.put(("home",), "pet", {"text": "a cat"})
    files = {f["name"]: f for f in mem.inspect_memory()["files"] if f["kind"] == "typed"}
    work = next(f for n, f in files.items() if n.startswith("graph-work-deadline-"))
    home = next(f for n, f in files.items() if n.startswith("graph-home-pet-"))
    assert (work["type"], home["type"]) == ("project", "user")
    # Another prefix is another store over the same workspace.
    assert MnemoStore(mem).search(()) == []
    assert {i.key for i in store.search(())} == {"deadline", "pet"}


def test_errors_surface_typed(workspace):
    store = MnemoStore(Memory(url="http://127.0.0.1:9"))
    with pytest.raises(pymnemo.ConnectionFailedError):
        store.get(("n",), "k")


class State(TypedDict):
    user: str
    fact: str
    recalled: list


def _graph():
    from langgraph.runtime import Runtime

    def remember(state: State, runtime: Runtime):
        runtime.store.put(("users", state["user"], "facts"), state["fact"][:12], {"text": state["fact"]})
        return {}

    def recall(state: State, runtime: Runtime):
        word = state["fact"].split()[-1]
        items = runtime.store.search(("users", state["user"]), query=word)
        return {"recalled": [i.value["text"] for i in items]}

    async def arecall(state: State, runtime: Runtime):
        word = state["fact"].split()[-1]
        items = await runtime.store.asearch(("users", state["user"]), query=word)
        return {"recalled": [i.value["text"] for i in items]}

    b = StateGraph(State)
    b.add_node("remember", remember)
    b.add_node("recall", recall)
    b.add_edge(START, "remember")
    b.add_edge("remember", "recall")
    b.add_edge("recall", END)
    a = StateGraph(State)
    a.add_node("remember", remember)
    a.add_node("recall", arecall)
    a.add_edge(START, "remember")
    a.add_edge("remember", "recall")
    a.add_edge("recall", END)
    return b, a


def test_a_graph_remembers_across_runs(workspace):
    sync_builder, async_builder = _graph()
    with Memory(workspace=workspace, settings=KEYWORDS) as mem:
        graph = sync_builder.compile(store=MnemoStore(mem))
        out = graph.invoke({"user": "ada", "fact": "Ada writes Rust", "recalled": []})
        assert out["recalled"] == ["Ada writes Rust"]
        agraph = async_builder.compile(store=MnemoStore(mem))
        out = asyncio.run(agraph.ainvoke({"user": "ada", "fact": "Ada drinks mate", "recalled": []}))
        assert out["recalled"] == ["Ada drinks mate"]
    # A new process's store (a new server on the same folder) finds both.
    with Memory(workspace=workspace, settings=KEYWORDS) as mem:
        store = MnemoStore(mem)
        assert {i.value["text"] for i in store.search(("users", "ada"))} == {"Ada writes Rust", "Ada drinks mate"}
