"""Memory, the sync client: each operation against a real server."""

from __future__ import annotations

import os
import threading
import time

import pytest

import pymnemo
from pymnemo import Memory

from .conftest import KEYWORDS


def test_health_and_url(mem):
    h = mem.health()
    assert h["status"] == "ok" and h["version"]
    assert mem.url.startswith("http://127.0.0.1:") and mem.url.endswith("/v1")
    assert mem.owns_server


def test_append_history_and_sessions(mem):
    out = mem.append(
        "telegram:42",
        [
            {"role": "user", "content": "I moved to Berlin last week."},
            {"role": "assistant", "content": "Noted: Berlin."},
        ],
    )
    assert out == {"key": "telegram:42", "appended": 2, "messages": 2}
    # One message as a dict, and the fields mnemo does not know kept verbatim.
    out = mem.append("telegram:42", {"role": "user", "content": "Thanks!", "app": {"id": 7}})
    assert out["messages"] == 3

    log = mem.session_history("telegram:42")
    assert log["total"] == 3 and log["last_consolidated"] == 0 and log["warnings"] == []
    assert [m["content"] for m in log["messages"]] == [
        "I moved to Berlin last week.",
        "Noted: Berlin.",
        "Thanks!",
    ]
    assert log["messages"][2]["app"] == {"id": 7}
    assert all(m["timestamp"] for m in log["messages"])
    replay = mem.session_history("telegram:42", since_cursor=True)
    assert [m["role"] for m in replay["messages"]] == ["user", "assistant", "user"]

    listed = mem.sessions()["sessions"]
    assert [(s["key"], s["messages"]) for s in listed] == [("telegram:42", 3)]


def test_session_keys_are_encoded(mem):
    for key in ("a/b c", "ünï:códe", "x?y#z&w=1"):
        mem.append(key, [{"role": "user", "content": f"hello from {key}"}])
        assert mem.session_history(key)["key"] == key
    assert {s["key"] for s in mem.sessions()["sessions"]} == {"a/b c", "ünï:códe", "x?y#z&w=1"}
    with pytest.raises(ValueError):
        mem.append("", [{"role": "user", "content": "x"}])


def test_append_takes_dicts_only(mem):
    with pytest.raises(TypeError, match="OpenAI chat shape"):
        mem.append("k", "just a string")  # type: ignore[arg-type]


def test_write_search_get(mem):
    w = mem.write("The user prefers green tea, no sugar.")
    assert w["mode"] == "daily" and w["written"] == 1 and w["path"].startswith("memory/")

    found = mem.search("green tea")
    assert found["mode"] == "keyword"
    assert any("keyword-only" in x for x in found["warnings"])
    hit = found["results"][0]
    assert "green tea" in hit["snippet"] and hit["source"] == "memory"

    # The citation opens with get, as the README promises.
    got = mem.get(hit["citation"])
    assert "green tea" in got["text"] and got["path"] == hit["path"]
    whole = mem.get(hit["path"])
    assert whole["from"] == 1 and whole["total_lines"] >= 1
    one = mem.get(hit["path"], from_line=whole["total_lines"], lines=1)
    assert one["lines"] == 1 and "green tea" in one["text"]

    explained = mem.search("green tea", max_results=1, explain=True)
    assert len(explained["results"]) == 1 and "parts" in explained["results"][0]
    assert mem.search("green tea", min_score=0.5, rerank=False, as_of="2999-01-01")["results"]
    assert mem.search("green tea", mode="keyword")["mode"] == "keyword"
    with pytest.raises(pymnemo.InvalidInputError, match="min_score"):
        mem.search("green tea", min_score=1.5)
    missing = mem.get("memory/none-such.md")
    assert missing["text"] == "" and missing["total_lines"] == 0


def test_search_finds_sessions(mem):
    mem.append("chat", [{"role": "user", "content": "The deploy key lives in vault/ops."}])
    hits = mem.search("deploy key vault")["results"]
    assert any(h["source"] == "sessions" and h.get("session_key") == "chat" for h in hits)


def test_typed_memory_section_forget_history(mem):
    t = mem.write("Prefers green tea, no sugar.", name="Tea", type="user", description="drinks green tea")
    assert t == {"mode": "typed", "path": "memory/tea.md", "name": "Tea", "type": "user", "action": "created"}
    # A taken name is refused unless replace=True.
    with pytest.raises(pymnemo.InvalidInputError) as e:
        mem.write("Now prefers black tea.", name="Tea", type="user")
    assert e.value.code == "invalid_input" and e.value.status == 400 and "replace" in e.value.message
    r = mem.write("Now prefers black tea.", name="Tea", type="user", replace=True)
    assert r["action"] == "replaced"

    s = mem.write("- Berlin", heading="Home")
    assert s["mode"] == "memory_section" and s["action"] == "added" and s["changed"]
    assert "## Home" in mem.get("MEMORY.md")["text"]

    h = mem.history("Tea")
    assert h["name"] == "Tea" and [c["op"] for c in h["changes"]] == ["write", "write"]

    assert mem.forget("Tea") == {"removed": "memory/tea.md"}
    with pytest.raises(pymnemo.NotFoundError) as e:
        mem.forget("Tea")
    assert e.value.code == "not_found" and e.value.status == 404
    assert [c["op"] for c in mem.history("Tea")["changes"]][-1] == "forget"


def test_context_and_memory_work(mem):
    mem.append("s", [{"role": "user", "content": "hello"}])
    ctx = mem.context("s", "what did I say?")
    assert isinstance(ctx["notes"], list)
    assert any(m.get("content") == "hello" for m in ctx["messages"])
    work = mem.memory_work("s")
    assert work["key"] == "s" and work["state"] == "idle"


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.consolidate("s"),
        lambda m: m.compact("s", level=5, focus="the deploy"),
        lambda m: m.close_session("s"),
        lambda m: m.turn("s", "hello", max_iterations=2, recall=False),
    ],
    ids=["consolidate", "compact", "close_session", "turn"],
)
def test_model_operations_say_no_model(mem, call):
    mem.append("s", [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}])
    with pytest.raises(pymnemo.NotConfiguredError) as e:
        call(mem)
    err = e.value
    assert isinstance(err, pymnemo.ConfigError)
    assert (err.code, err.status) == ("config", 501)
    assert "no chat model is configured" in err.message


def test_dream_undo_inspect(mem):
    d = mem.dream()
    assert d["changed"] is False and isinstance(d["current"], int) and d["id"]
    with pytest.raises(pymnemo.NotFoundError, match="no consolidation to undo"):
        mem.undo()
    with pytest.raises(pymnemo.NotFoundError):
        mem.undo("dream")
    mem.write("x", name="Note", type="project")
    view = mem.inspect_memory()
    assert any(f["path"] == "memory/note.md" and f["kind"] == "typed" for f in view["files"])


def test_threads_share_one_client(mem):
    mem.write("Shared fact about kiwis.")
    errors: list[BaseException] = []

    def work():
        try:
            for _ in range(20):
                assert mem.search("kiwis")["results"]
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_close_stops_the_server_it_started(workspace):
    m = Memory(workspace=workspace, settings=KEYWORDS)
    proc = m._server.proc
    assert proc.poll() is None
    m.close()
    assert proc.poll() is not None
    with pytest.raises(pymnemo.ConnectionFailedError):
        m.health()


def test_clients_of_one_process_share_a_server(workspace):
    a = Memory(workspace=workspace, settings=KEYWORDS)
    b = Memory(workspace=workspace, settings=KEYWORDS)
    assert a.url == b.url and a._server is b._server
    a.close()
    assert b.health()["status"] == "ok"
    proc = b._server.proc
    b.close()
    assert proc.poll() is not None


def test_attaches_to_a_running_server(workspace, serve):
    s = serve(workspace)
    with Memory(workspace=workspace) as m:
        assert not m.owns_server
        assert m.url == s.url + "/v1"
        m.write("Written through the attached client.")
    # Closing an attached client leaves the server running.
    assert s.proc.poll() is None
    with Memory(workspace=workspace) as again:
        assert again.search("attached client")["results"]


def test_new_workspace_folder_is_created(tmp_path):
    ws = tmp_path / "deep" / "new"
    with Memory(workspace=ws, settings=KEYWORDS) as m:
        m.write("first memory")
    assert (ws / "memory").is_dir()


def test_workspace_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMO_WORKSPACE", str(tmp_path / "envws"))
    with Memory(settings=KEYWORDS) as m:
        assert m.workspace == (tmp_path / "envws").resolve()


def test_remote_url_forms(workspace, serve):
    s = serve(workspace)
    for url in (s.url, s.url + "/", s.url + "/v1"):
        with Memory(url=url) as m:
            assert m.health()["status"] == "ok"
            assert m.url == s.url + "/v1"
            assert m.sessions() == {"sessions": []}
    with pytest.raises(ValueError):
        Memory(url="ftp://example.org")
    with pytest.raises(ValueError):
        Memory(workspace=workspace, url=s.url)


def test_tenant_urls():
    from pymnemo._http import parse_url

    a = parse_url("https://mnemo.example/v1/workspaces/alice")
    assert (a.scheme, a.host, a.port, a.prefix) == ("https", "mnemo.example", 443, "/v1/workspaces/alice")
    b = parse_url("http://10.0.0.2:8767", workspace_id="bob smith")
    assert b.prefix == "/v1/workspaces/bob%20smith"
    c = parse_url("http://proxy.example/mnemo/")
    assert c.prefix == "/mnemo/v1"
    # /health is at the server's root, whatever the workspace is called.
    m = Memory(url="http://127.0.0.1:9/v1/workspaces/v1")
    assert m._health == "/health" and m.url == "http://127.0.0.1:9/v1/workspaces/v1"
    assert Memory(url="http://proxy.example/mnemo")._health == "/mnemo/health"


def test_server_log_lines_reach_logging(workspace, caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="pymnemo.server"):
        with Memory(workspace=workspace, settings=KEYWORDS):
            pass
    assert any("listening on" in r.getMessage() for r in caplog.records)


def test_python_m_runs_the_binary():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "pymnemo", "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.startswith("mnemo")


def test_many_calls_keep_one_connection(mem):
    mem.search("warm up")
    t = mem._transport
    for _ in range(50):
        mem.search("anything")
    assert len(t._idle) == 1


@pytest.mark.skipif(os.name != "posix", reason="process checks")
def test_exit_stops_servers(workspace, mnemo_bin):
    import subprocess
    import sys

    code = (
        "import sys, pymnemo; m = pymnemo.Memory(workspace=sys.argv[1], settings={'embedder.kind': 'none'});"
        "print(m._server.proc.pid, flush=True)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(workspace)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the server outlived the Python process that started it")
