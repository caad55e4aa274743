"""HTTP/1.1 with keep-alive: `http.client` for the sync client, asyncio
streams for the async one. Each keeps a small pool of open connections, so
a call costs one request on a warm socket."""

from __future__ import annotations

import asyncio
import http.client
import socket
import ssl as _ssl
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from .errors import ConnectionFailedError

# Errors of a connection the server closed while it sat idle in the pool:
# the request is sent again once, on a new connection.
_STALE = (
    http.client.RemoteDisconnected,
    http.client.BadStatusLine,
    ConnectionResetError,
    BrokenPipeError,
    ConnectionAbortedError,
)

MAX_IDLE = 8


@dataclass(frozen=True)
class Endpoint:
    """Where the API is: scheme, host, port and the path every route hangs under."""

    scheme: str
    host: str
    port: int
    prefix: str  # "/v1" or "/v1/workspaces/ID"

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def parse_url(url: str, workspace_id: str | None = None) -> Endpoint:
    """An endpoint from a server's URL. ``http://host:8767`` is a
    single-workspace server; ``http://host:8767/v1/workspaces/alice`` (or
    ``workspace_id="alice"``) a workspace of a multi-tenant one; a URL
    with another path is a server mounted there by a reverse proxy."""
    from urllib.parse import quote

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"the URL {url!r} must start with http:// or https://")
    if not parts.hostname:
        raise ValueError(f"the URL {url!r} names no host")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = parts.path.rstrip("/")
    if workspace_id is not None:
        if "/v1/workspaces/" in path:
            raise ValueError("give the workspace in the URL or as workspace_id=, not both")
        root = path[: -len("/v1")] if path.endswith("/v1") else path
        prefix = f"{root}/v1/workspaces/{quote(workspace_id, safe='')}"
    elif "/v1/workspaces/" in path:
        head, _, rest = path.partition("/v1/workspaces/")
        if not rest or "/" in rest:
            raise ValueError(f"the URL {url!r} should end with /v1/workspaces/ID")
        prefix = f"{head}/v1/workspaces/{rest}"
    elif path.endswith("/v1"):
        prefix = path
    else:
        prefix = f"{path}/v1"
    return Endpoint(parts.scheme, parts.hostname, port, prefix)


def _connection_error(endpoint: Endpoint, e: BaseException) -> ConnectionFailedError:
    why = str(e) or type(e).__name__
    return ConnectionFailedError(f"cannot reach mnemo at {endpoint.base_url}: {why}")


class SyncTransport:
    """Requests over a pool of keep-alive `http.client` connections (safe
    to share between threads: each request takes a connection of its own)."""

    def __init__(
        self,
        endpoint: Endpoint,
        headers: dict[str, str],
        timeout: float | None,
        ssl_context: _ssl.SSLContext | None = None,
    ):
        self.endpoint = endpoint
        self.timeout = timeout
        self.ssl_context = ssl_context
        self._get_headers = dict(headers)
        self._post_headers = {**headers, "Content-Type": "application/json"}
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    def _new(self) -> http.client.HTTPConnection:
        ep = self.endpoint
        if ep.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                ep.host, ep.port, timeout=self.timeout, context=self.ssl_context
            )
        else:
            conn = http.client.HTTPConnection(ep.host, ep.port, timeout=self.timeout)
        conn.connect()
        # Small requests go out at once rather than waiting for an ACK.
        if conn.sock is not None:
            try:
                conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        return conn

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """Sends one request; the status and the body of its answer."""
        if body is None and method != "GET":
            body = b""
        headers = self._get_headers if body is None else self._post_headers
        for attempt in (0, 1):
            with self._lock:
                if self._closed:
                    raise ConnectionFailedError("the client is closed")
                conn = self._idle.pop() if self._idle and attempt == 0 else None
            reused = conn is not None
            try:
                if conn is None:
                    conn = self._new()
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except _STALE as e:
                if conn is not None:
                    conn.close()
                if reused:
                    continue
                raise _connection_error(self.endpoint, e) from None
            except (OSError, http.client.HTTPException) as e:
                if conn is not None:
                    conn.close()
                raise _connection_error(self.endpoint, e) from None
            if resp.will_close:
                conn.close()
            else:
                with self._lock:
                    if not self._closed and len(self._idle) < MAX_IDLE:
                        self._idle.append(conn)
                        conn = None
                if conn is not None:
                    conn.close()
            return resp.status, data
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()


class _AsyncConn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        try:
            self.writer.close()
        except Exception:
            pass


class _Stale(Exception):
    """The server closed a pooled connection before answering."""


class AsyncTransport:
    """Requests over a pool of keep-alive asyncio stream connections; each
    request in flight has a connection of its own."""

    def __init__(
        self,
        endpoint: Endpoint,
        headers: dict[str, str],
        timeout: float | None,
        ssl_context: _ssl.SSLContext | None = None,
    ):
        self.endpoint = endpoint
        self.timeout = timeout
        self.ssl_context = ssl_context
        ep = endpoint
        host = f"[{ep.host}]" if ":" in ep.host else ep.host
        default_port = 443 if ep.scheme == "https" else 80
        host_header = host if ep.port == default_port else f"{host}:{ep.port}"
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self._head_tail = f" HTTP/1.1\r\nHost: {host_header}\r\n{extra}".encode("latin-1")
        self._idle: list[_AsyncConn] = []
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _new(self) -> _AsyncConn:
        ep = self.endpoint
        ssl_arg: _ssl.SSLContext | None = None
        if ep.scheme == "https":
            ssl_arg = self.ssl_context or _ssl.create_default_context()
        reader, writer = await asyncio.open_connection(ep.host, ep.port, ssl=ssl_arg, limit=1 << 20)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        return _AsyncConn(reader, writer)

    async def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        if self.timeout is None:
            return await self._request(method, path, body)
        try:
            return await asyncio.wait_for(self._request(method, path, body), self.timeout)
        except asyncio.TimeoutError:
            raise _connection_error(self.endpoint, TimeoutError(f"no answer within {self.timeout} s")) from None

    async def _request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        if body is None and method != "GET":
            body = b""
        head = method.encode("ascii") + b" " + path.encode("ascii") + self._head_tail
        if body is not None:
            head += b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode("ascii") + b"\r\n"
        head += b"\r\n"
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # Connections belong to the loop that opened them.
            stale, self._idle = self._idle, []
            for c in stale:
                c.close()
            self._loop = loop
        for attempt in (0, 1):
            if self._closed:
                raise ConnectionFailedError("the client is closed")
            conn = self._idle.pop() if self._idle and attempt == 0 else None
            reused = conn is not None
            try:
                if conn is None:
                    conn = await self._new()
                conn.writer.write(head + body if body else head)
                status, data, keep = await self._read(conn, reused)
            except _Stale:
                if conn is not None:
                    conn.close()
                continue
            except (OSError, ValueError, EOFError, asyncio.LimitOverrunError) as e:
                if conn is not None:
                    conn.close()
                raise _connection_error(self.endpoint, e) from None
            except BaseException:
                # Cancelled mid-request: the connection's state is unknown.
                if conn is not None:
                    conn.close()
                raise
            if keep and not self._closed and len(self._idle) < MAX_IDLE:
                self._idle.append(conn)
            else:
                conn.close()
            return status, data
        raise AssertionError("unreachable")

    @staticmethod
    async def _read(conn: _AsyncConn, reused: bool) -> tuple[int, bytes, bool]:
        r = conn.reader
        try:
            line = await r.readline()
        except (ConnectionResetError, BrokenPipeError):
            if reused:
                raise _Stale() from None
            raise
        if not line:
            if reused:
                raise _Stale()
            raise EOFError("the server closed the connection without answering")
        parts = line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise ValueError(f"not an HTTP answer: {line[:80]!r}")
        status = int(parts[1])
        length = -1
        chunked = False
        keep = parts[0] == b"HTTP/1.1"
        while True:
            h = await r.readline()
            if h in (b"\r\n", b"\n"):
                break
            if not h:
                raise EOFError("the answer's headers were cut off")
            name, _, value = h.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value.strip())
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"connection":
                v = value.strip().lower()
                keep = v != b"close" if keep else v == b"keep-alive"
        if chunked:
            chunks = []
            while True:
                size_line = await r.readline()
                size = int(size_line.split(b";", 1)[0].strip(), 16)
                if size == 0:
                    while (await r.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(await r.readexactly(size))
                await r.readexactly(2)
            data = b"".join(chunks)
        elif length >= 0:
            data = await r.readexactly(length) if length else b""
        elif status in (204, 304) or 100 <= status < 200:
            data = b""
        else:
            data = await r.read()
            keep = False
        return status, data, keep

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for c in idle:
            c.close()
        for c in idle:
            try:
                await c.writer.wait_closed()
            except Exception:
                pass

    def close_nowait(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for c in idle:
            c.close()
