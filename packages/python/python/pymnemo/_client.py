"""`Memory` and `AsyncMemory`: mnemo's HTTP API, one method per operation."""

from __future__ import annotations

import json
import os
import ssl as _ssl
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union
from urllib.parse import quote, urlencode

from . import _server
from ._http import AsyncTransport, Endpoint, SyncTransport, parse_url
from .errors import from_response

if TYPE_CHECKING:
    from .types import (
        AppendOutput,
        CloseOutput,
        ContextOutput,
        DreamOutput,
        EventsOutput,
        ForgetOutput,
        GetOutput,
        HealthOutput,
        HistoryOutput,
        MemoryHistoryOutput,
        MemoryView,
        MemoryWorkOutput,
        MessageShape,
        SearchOutput,
        SessionsOutput,
        TurnOutput,
        UndoOutput,
        WriteOutput,
    )

Message = Union["MessageShape", Mapping[str, Any]]
MemoryType = Literal["user", "feedback", "project", "reference"]
WriteMode = Literal["daily", "typed", "memory_section"]
SearchMode = Literal["hybrid", "keyword", "vector"]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_loads = json.loads


def _body(fields: dict[str, Any]) -> bytes:
    return _dumps({k: v for k, v in fields.items() if v is not None}).encode("utf-8")


def _key(key: str) -> str:
    if not isinstance(key, str) or not key:
        raise ValueError("a session key is a non-empty string")
    return quote(key, safe="")


def _messages(messages: Message | Iterable[Message]) -> list[Any]:
    if isinstance(messages, Mapping):
        return [dict(messages)]
    if isinstance(messages, (str, bytes)):
        raise TypeError('messages are dicts in the OpenAI chat shape: [{"role": "user", "content": "..."}]')
    return [dict(m) for m in messages]


class _Base:
    """What both clients share: where the server is, and how each
    operation's request is made."""

    _transport: SyncTransport | AsyncTransport

    def __init__(
        self,
        workspace: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        workspace_id: str | None = None,
        binary: str | os.PathLike[str] | None = None,
        settings: Mapping[str, object] | None = None,
        env: Mapping[str, str] | None = None,
        attach: bool = True,
        timeout: float | None = 600.0,
        startup_timeout: float = 60.0,
        ssl_context: _ssl.SSLContext | None = None,
    ):
        self._server: _server.LocalServer | None = None
        self.workspace: Path | None = None
        if url is not None:
            if workspace is not None:
                raise ValueError("give a workspace folder or a server url, not both")
            if settings or env or binary is not None:
                raise ValueError("settings=, env= and binary= are for a local server (workspace=)")
            endpoint = parse_url(url, workspace_id)
            if token is None:
                token = os.environ.get("MNEMO_TOKEN")
        else:
            if workspace_id is not None:
                raise ValueError("workspace_id= names a workspace of a multi-tenant server: pass url= too")
            if workspace is None:
                workspace = os.environ.get("MNEMO_WORKSPACE") or Path.home() / ".mnemo"
            self.workspace = Path(os.path.realpath(Path(workspace).expanduser()))
            addr, self._server = _server.acquire(
                self.workspace,
                binary=binary,
                settings=settings,
                env=env,
                token=token,
                attach=attach,
                timeout=startup_timeout,
            )
            if token is None:
                token = os.environ.get("MNEMO_TOKEN") if self._server is not None else None
            host, _, port = addr.rpartition(":")
            endpoint = Endpoint("http", host.strip("[]"), int(port), "/v1")
        self._endpoint = endpoint
        self._prefix = endpoint.prefix
        tenant = endpoint.prefix.find("/v1/workspaces/")
        root = endpoint.prefix[:tenant] if tenant >= 0 else endpoint.prefix[: -len("/v1")]
        self._health = f"{root}/health"
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._conn_args = (endpoint, headers, timeout, ssl_context)
        self._make_transport(endpoint, headers, timeout, ssl_context)

    def _twin_sync(self) -> SyncTransport:
        """A sync transport to the same server (for adapters that need both)."""
        return SyncTransport(*self._conn_args)

    def _twin_async(self) -> AsyncTransport:
        """An asyncio transport to the same server."""
        return AsyncTransport(*self._conn_args)

    @staticmethod
    def _decode(status: int, data: bytes) -> Any:
        if 200 <= status < 300:
            return _loads(data) if data else None
        raise from_response(status, data)

    def _make_transport(self, endpoint, headers, timeout, ssl_context) -> None:
        raise NotImplementedError

    @property
    def url(self) -> str:
        """The API's base URL (``http://127.0.0.1:PORT/v1``, or a tenant's)."""
        return self._endpoint.base_url + self._prefix

    @property
    def owns_server(self) -> bool:
        """True when this client started the server it talks to (closing
        the last client that uses it stops it)."""
        return self._server is not None

    def __repr__(self) -> str:
        where = f"workspace={str(self.workspace)!r}, " if self.workspace else ""
        return f"{type(self).__name__}({where}url={self.url!r})"

    def _release_server(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            _server.release(server)

    # ----- requests: (method, path, body) -----

    def _r_health(self):
        return "GET", self._health, None

    def _r_sessions(self):
        return "GET", f"{self._prefix}/sessions", None

    def _r_append(self, key, messages):
        return "POST", f"{self._prefix}/sessions/{_key(key)}/messages", _body({"messages": _messages(messages)})

    def _r_session_history(self, key, since_cursor):
        q = "?since_cursor=true" if since_cursor else ""
        return "GET", f"{self._prefix}/sessions/{_key(key)}/messages{q}", None

    def _r_context(self, key, message):
        return "POST", f"{self._prefix}/sessions/{_key(key)}/context", _body({"message": message})

    def _r_consolidate(self, key):
        return "POST", f"{self._prefix}/sessions/{_key(key)}/consolidate", b""

    def _r_compact(self, key, level, focus):
        return "POST", f"{self._prefix}/sessions/{_key(key)}/compact", _body({"level": level, "focus": focus})

    def _r_close_session(self, key):
        return "POST", f"{self._prefix}/sessions/{_key(key)}/close", b""

    def _r_turn(self, key, message, max_iterations, recall):
        body = _body({"message": message, "max_iterations": max_iterations, "recall": recall})
        return "POST", f"{self._prefix}/sessions/{_key(key)}/turn", body

    def _r_memory_work(self, key):
        return "GET", f"{self._prefix}/sessions/{_key(key)}/memory-work", None

    def _r_search(self, query, max_results, min_score, rerank, as_of, explain, mode=None, budget_tokens=None, expand=None):
        body = _body(
            {
                "query": query,
                "max_results": max_results,
                "min_score": min_score,
                "rerank": rerank,
                "expand": expand,
                "as_of": as_of,
                "explain": explain,
                "mode": mode,
                "budget_tokens": budget_tokens,
            }
        )
        return "POST", f"{self._prefix}/memory/search", body

    def _r_get(self, path, from_line, lines):
        q = {"path": path}
        if from_line is not None:
            q["from"] = str(from_line)
        if lines is not None:
            q["lines"] = str(lines)
        return "GET", f"{self._prefix}/memory/get?{urlencode(q, quote_via=quote)}", None

    def _r_write(self, text, name, type, description, heading, replace, mode):
        body = _body(
            {
                "text": text,
                "mode": mode,
                "name": name,
                "type": type,
                "description": description,
                "heading": heading,
                "replace": replace,
            }
        )
        return "POST", f"{self._prefix}/memory/write", body

    def _r_forget(self, name):
        return "POST", f"{self._prefix}/memory/forget", _body({"name": name})

    def _r_history(self, name):
        return "GET", f"{self._prefix}/memory/history?{urlencode({'name': name}, quote_via=quote)}", None

    def _r_dream(self):
        return "POST", f"{self._prefix}/memory/dream", b""

    def _r_undo(self, what):
        return "POST", f"{self._prefix}/memory/undo", _body({"what": what})

    def _r_inspect_memory(self, as_of):
        q = f"?{urlencode({'as_of': as_of}, quote_via=quote)}" if as_of else ""
        return "GET", f"{self._prefix}/inspect/memory{q}", None


class Memory(_Base):
    """mnemo over its HTTP API.

    ``Memory(workspace="~/agent-memory")`` runs a local ``mnemo serve`` for
    that folder (creating it when missing), or attaches to one already
    serving it; ``Memory(url="https://mnemo.example", token=...)`` talks
    to a running server, and ``url=".../v1/workspaces/alice"`` (or
    ``workspace_id="alice"``) to one workspace of a multi-tenant server.

    Local servers: ``settings={"embedder.kind": "none"}`` is passed as
    ``--set`` overrides, ``env=`` adds environment variables (``MNEMO_*``),
    ``binary=`` names the mnemo binary (default: ``MNEMO_BIN``, else the
    one the wheel installed, else ``PATH``), ``attach=False`` always starts
    a new server. A server this client started stops when it is closed
    (``with Memory(...) as mem:``, or ``mem.close()``).

    Every method answers the API's JSON as a dict (its type in
    :mod:`pymnemo.types`) and raises a :class:`~pymnemo.MnemoError`
    subclass for mnemo's error codes.
    """

    _transport: SyncTransport

    def _make_transport(self, endpoint, headers, timeout, ssl_context) -> None:
        self._transport = SyncTransport(endpoint, headers, timeout, ssl_context)

    def _call(self, method: str, path: str, body: bytes | None) -> Any:
        status, data = self._transport.request(method, path, body)
        if 200 <= status < 300:
            return _loads(data) if data else None
        raise from_response(status, data)

    def close(self) -> None:
        """Closes the connections, and stops the server if this client
        started it (and no other client of this process uses it)."""
        self._transport.close()
        self._release_server()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- the server -----

    def health(self) -> HealthOutput:
        """``GET /health``: the server is up, and its version."""
        return self._call(*self._r_health())

    # ----- sessions -----

    def sessions(self) -> SessionsOutput:
        """Every session, newest first."""
        return self._call(*self._r_sessions())

    def append(self, key: str, messages: Message | Iterable[Message]) -> AppendOutput:
        """Appends messages (OpenAI chat shape: ``{"role", "content", ...}``,
        one or a list, oldest first) to the session ``key``'s log."""
        return self._call(*self._r_append(key, messages))

    def session_history(self, key: str, *, since_cursor: bool = False) -> HistoryOutput:
        """A session's messages: all of them, or (``since_cursor=True``)
        those past the consolidation cursor, replayed as a model sees them."""
        return self._call(*self._r_session_history(key, since_cursor))

    def context(self, key: str, message: str | None = None) -> ContextOutput:
        """The request the engine would send for the session's next turn,
        with the tokens of each part."""
        return self._call(*self._r_context(key, message))

    def consolidate(self, key: str) -> EventsOutput:
        """Distils everything past the session's cursor into memory now
        (needs a chat model: NotConfiguredError without one)."""
        return self._call(*self._r_consolidate(key))

    def compact(self, key: str, *, level: int | None = None, focus: str | None = None) -> EventsOutput:
        """Runs the compaction pipeline on a session (or one ``level``, 1-6);
        ``focus`` is what a summary keeps above all."""
        return self._call(*self._r_compact(key, level, focus))

    def close_session(self, key: str) -> CloseOutput:
        """Closes the conversation: consolidates its tail and writes a
        session note (as ``mnemo new``)."""
        return self._call(*self._r_close_session(key))

    def turn(
        self, key: str, message: str, *, max_iterations: int | None = None, recall: bool | None = None
    ) -> TurnOutput:
        """One agent turn with mnemo's own agent and memory tools (as ``mnemo run``)."""
        return self._call(*self._r_turn(key, message, max_iterations, recall))

    def memory_work(self, key: str) -> MemoryWorkOutput:
        """What the memory work after a session's turns is doing, or did last."""
        return self._call(*self._r_memory_work(key))

    # ----- memory -----

    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        rerank: bool | None = None,
        as_of: str | None = None,
        explain: bool | None = None,
        mode: SearchMode | None = None,
        budget_tokens: int | None = None,
        expand: bool | None = None,
    ) -> SearchOutput:
        """Searches memory and past sessions; hits best first, each with a
        ``citation`` that :meth:`get` opens. ``mode`` ranks by ``hybrid``
        (the default), ``keyword`` or ``vector`` alone; ``budget_tokens``
        fits the hits into about that many tokens, each cut to its useful
        lines; ``expand`` searches a passage the server's chat model writes
        as the answer beside the query."""
        return self._call(*self._r_search(query, max_results, min_score, rerank, as_of, explain, mode, budget_tokens, expand))

    def get(self, path: str, *, from_line: int | None = None, lines: int | None = None) -> GetOutput:
        """Lines of a memory file or a cited session log (``path`` may be a
        citation such as ``memory/2026-03-01.md#L4-L4``), secrets taken out."""
        return self._call(*self._r_get(path, from_line, lines))

    def write(
        self,
        text: str,
        *,
        name: str | None = None,
        type: MemoryType | None = None,
        description: str | None = None,
        heading: str | None = None,
        replace: bool | None = None,
        mode: WriteMode | None = None,
    ) -> WriteOutput:
        """Saves to memory: ``text`` alone appends to today's log; with
        ``name`` and ``type`` it saves a typed memory (``replace=True``
        updates one of that name); with ``heading`` it replaces that
        section of MEMORY.md."""
        return self._call(*self._r_write(text, name, type, description, heading, replace, mode))

    def forget(self, name: str) -> ForgetOutput:
        """Deletes a typed memory (its name or path) or a fact (its id, ``f12``)."""
        return self._call(*self._r_forget(name))

    def history(self, name: str) -> MemoryHistoryOutput:
        """Every recorded change of a memory (a fact's id or a typed memory's name)."""
        return self._call(*self._r_history(name))

    def dream(self) -> DreamOutput:
        """Tidies memory/facts.md: merges duplicates, folds old daily logs
        in, ends contradicted facts (no model needed; ``undo("dream")``
        reverses it)."""
        return self._call(*self._r_dream())

    def undo(self, what: Literal["consolidation", "dream"] = "consolidation") -> UndoOutput:
        """Undoes the newest consolidation of MEMORY.md, or the newest dream."""
        return self._call(*self._r_undo(what))

    def inspect_memory(self, *, as_of: str | None = None) -> MemoryView:
        """MEMORY.md, every fact with its state and sources, and the files
        of memory/ (as they stood on ``as_of``, ``YYYY-MM-DD``)."""
        return self._call(*self._r_inspect_memory(as_of))


class AsyncMemory(_Base):
    """:class:`Memory` for asyncio: the same arguments and methods, each a
    coroutine. A local server is started (or attached to) when the client
    is made; ``async with AsyncMemory(...) as mem:`` closes it."""

    _transport: AsyncTransport

    def _make_transport(self, endpoint, headers, timeout, ssl_context) -> None:
        self._transport = AsyncTransport(endpoint, headers, timeout, ssl_context)

    async def _call(self, method: str, path: str, body: bytes | None) -> Any:
        status, data = await self._transport.request(method, path, body)
        if 200 <= status < 300:
            return _loads(data) if data else None
        raise from_response(status, data)

    async def aclose(self) -> None:
        """Closes the connections, and stops the server if this client started it."""
        await self._transport.aclose()
        if self._server is not None:
            import asyncio

            await asyncio.to_thread(self._release_server)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def health(self) -> HealthOutput:
        """``GET /health``: the server is up, and its version."""
        return await self._call(*self._r_health())

    async def sessions(self) -> SessionsOutput:
        """Every session, newest first."""
        return await self._call(*self._r_sessions())

    async def append(self, key: str, messages: Message | Iterable[Message]) -> AppendOutput:
        """Appends messages (one or a list, oldest first) to a session's log."""
        return await self._call(*self._r_append(key, messages))

    async def session_history(self, key: str, *, since_cursor: bool = False) -> HistoryOutput:
        """A session's messages (all, or those past the consolidation cursor)."""
        return await self._call(*self._r_session_history(key, since_cursor))

    async def context(self, key: str, message: str | None = None) -> ContextOutput:
        """The request the engine would send for the session's next turn."""
        return await self._call(*self._r_context(key, message))

    async def consolidate(self, key: str) -> EventsOutput:
        """Distils everything past the session's cursor into memory now."""
        return await self._call(*self._r_consolidate(key))

    async def compact(self, key: str, *, level: int | None = None, focus: str | None = None) -> EventsOutput:
        """Runs the compaction pipeline on a session (or one level of it)."""
        return await self._call(*self._r_compact(key, level, focus))

    async def close_session(self, key: str) -> CloseOutput:
        """Closes the conversation: consolidates its tail, writes a session note."""
        return await self._call(*self._r_close_session(key))

    async def turn(
        self, key: str, message: str, *, max_iterations: int | None = None, recall: bool | None = None
    ) -> TurnOutput:
        """One agent turn with mnemo's own agent and memory tools."""
        return await self._call(*self._r_turn(key, message, max_iterations, recall))

    async def memory_work(self, key: str) -> MemoryWorkOutput:
        """What the memory work after a session's turns is doing, or did last."""
        return await self._call(*self._r_memory_work(key))

    async def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        rerank: bool | None = None,
        as_of: str | None = None,
        explain: bool | None = None,
        mode: SearchMode | None = None,
        budget_tokens: int | None = None,
        expand: bool | None = None,
    ) -> SearchOutput:
        """Searches memory and past sessions; hits best first."""
        return await self._call(*self._r_search(query, max_results, min_score, rerank, as_of, explain, mode, budget_tokens, expand))

    async def get(self, path: str, *, from_line: int | None = None, lines: int | None = None) -> GetOutput:
        """Lines of a memory file or a cited session log, secrets taken out."""
        return await self._call(*self._r_get(path, from_line, lines))

    async def write(
        self,
        text: str,
        *,
        name: str | None = None,
        type: MemoryType | None = None,
        description: str | None = None,
        heading: str | None = None,
        replace: bool | None = None,
        mode: WriteMode | None = None,
    ) -> WriteOutput:
        """Saves to today's log, a typed memory, or a section of MEMORY.md."""
        return await self._call(*self._r_write(text, name, type, description, heading, replace, mode))

    async def forget(self, name: str) -> ForgetOutput:
        """Deletes a typed memory or a fact."""
        return await self._call(*self._r_forget(name))

    async def history(self, name: str) -> MemoryHistoryOutput:
        """Every recorded change of a memory."""
        return await self._call(*self._r_history(name))

    async def dream(self) -> DreamOutput:
        """Tidies memory/facts.md (no model needed)."""
        return await self._call(*self._r_dream())

    async def undo(self, what: Literal["consolidation", "dream"] = "consolidation") -> UndoOutput:
        """Undoes the newest consolidation of MEMORY.md, or the newest dream."""
        return await self._call(*self._r_undo(what))

    async def inspect_memory(self, *, as_of: str | None = None) -> MemoryView:
        """MEMORY.md, every fact with its state and sources, the files of memory/."""
        return await self._call(*self._r_inspect_memory(as_of))
