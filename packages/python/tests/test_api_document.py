"""The package follows the OpenAPI document the server publishes: its
types are generated from it, and every operation has a method."""

from __future__ import annotations

import importlib.util
import inspect
import json
import urllib.request
from pathlib import Path

import pytest

import pymnemo
import pymnemo.types

GEN = Path(__file__).resolve().parents[1] / "scripts" / "gen_types.py"

# Each endpoint of the document, and the client method that calls it.
METHODS = {
    ("GET", "/health"): "health",
    ("GET", "/v1/sessions"): "sessions",
    ("POST", "/v1/sessions/{key}/messages"): "append",
    ("GET", "/v1/sessions/{key}/messages"): "session_history",
    ("POST", "/v1/sessions/{key}/context"): "context",
    ("POST", "/v1/sessions/{key}/consolidate"): "consolidate",
    ("POST", "/v1/sessions/{key}/compact"): "compact",
    ("POST", "/v1/sessions/{key}/close"): "close_session",
    ("POST", "/v1/sessions/{key}/turn"): "turn",
    ("GET", "/v1/sessions/{key}/memory-work"): "memory_work",
    ("POST", "/v1/memory/search"): "search",
    ("GET", "/v1/memory/get"): "get",
    ("POST", "/v1/memory/write"): "write",
    ("POST", "/v1/memory/forget"): "forget",
    ("POST", "/v1/memory/dream"): "dream",
    ("GET", "/v1/memory/history"): "history",
    ("POST", "/v1/memory/undo"): "undo",
    ("GET", "/v1/inspect/memory"): "inspect_memory",
}
# The document itself and the inspector page's other views.
NOT_CLIENT_METHODS = {
    ("GET", "/openapi.json"),
    ("GET", "/v1/inspect/changes"),
    ("GET", "/v1/inspect/sessions/{key}"),
    ("GET", "/v1/inspect/index"),
}


@pytest.fixture
def document(mem):
    base = mem.url[: -len("/v1")]
    with urllib.request.urlopen(base + "/openapi.json", timeout=10) as r:
        return json.load(r)


def test_every_operation_has_a_method(document):
    endpoints = {(m.upper(), p) for p, ops in document["paths"].items() for m in ops}
    assert endpoints - NOT_CLIENT_METHODS == set(METHODS), (
        "the server's endpoints changed: give each new one a method of Memory and AsyncMemory"
    )
    for name in METHODS.values():
        sync = getattr(pymnemo.Memory, name)
        coro = getattr(pymnemo.AsyncMemory, name)
        assert inspect.iscoroutinefunction(coro) and not inspect.iscoroutinefunction(sync), name
        assert inspect.signature(sync) == inspect.signature(coro), name


def test_types_are_generated_from_this_servers_document(document):
    spec = importlib.util.spec_from_file_location("gen_types", GEN)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    rendered = gen.render(document)
    current = Path(pymnemo.types.__file__).read_text()
    assert rendered == current, (
        "python/pymnemo/types.py is stale: run scripts/gen_types.py --from http://…/openapi.json"
    )


def test_answers_have_the_documented_fields(mem):
    """Spot checks that what the server answers carries every required
    field of its TypedDict."""
    t = pymnemo.types
    mem.append("k", [{"role": "user", "content": "hello types"}])
    mem.write("typed answers")
    cases = [
        (mem.health(), t.HealthOutput),
        (mem.sessions(), t.SessionsOutput),
        (mem.sessions()["sessions"][0], t.SessionEntry),
        (mem.session_history("k"), t.HistoryOutput),
        (mem.search("typed answers"), t.SearchOutput),
        (mem.search("typed answers")["results"][0], t.Hit),
        (mem.get("MEMORY.md"), t.GetOutput),
        (mem.dream(), t.DreamOutput),
        (mem.memory_work("k"), t.MemoryWorkOutput),
        (mem.context("k"), t.ContextOutput),
        (mem.inspect_memory(), t.MemoryView),
    ]
    for answer, td in cases:
        missing = td.__required_keys__ - answer.keys()
        assert not missing, f"{td.__name__} lacks {missing}"
