"""LangGraph's long-term store on mnemo: ``MnemoStore`` is a ``BaseStore``.

    from langgraph.graph import StateGraph
    from pymnemo import Memory
    from pymnemo.langgraph import MnemoStore

    store = MnemoStore(Memory(workspace="./agent-memory"))
    graph = builder.compile(store=store)

Each item is one typed memory of the workspace (``memory/lg-….md``): its
front matter names it, its description is one readable line of the value,
and its body holds the value's text (what search and the agent read) and,
in a ``json`` block, the exact namespace, key, value and times that
``get`` returns. So what a graph stores is mnemo memory like any other:
listed in MEMORY.md, found by ``mnemo search`` and by the agent's
``memory_search``, shown by the inspector, and every change recorded in
its history. ``search(..., query=...)`` ranks with mnemo's hybrid search
(keywords, and vectors when an embedding model is configured);
``search`` without a query and ``list_namespaces`` list the items.

Not supported: TTLs (``supports_ttl`` is False) and per-item ``index``
fields (mnemo indexes every memory file whole).

Install with ``pip install 'pymnemo[langgraph]'``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Generator, Iterable
from datetime import datetime, timezone
from typing import Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as e:  # pragma: no cover - the extra is not installed
    raise ImportError(f"pymnemo.langgraph needs LangGraph: pip install 'pymnemo[langgraph]' ({e})") from None

try:  # langgraph >= 1.1
    from langgraph.store.base import validate_op_namespace as _validate
except ImportError:  # pragma: no cover - older langgraph

    def _validate(op: Op) -> None:
        return None


from ._client import AsyncMemory, Memory, _Base
from ._http import AsyncTransport, SyncTransport
from .errors import NotFoundError

__all__ = ["MnemoStore"]

_OPEN = "```json\n"
_SLUG = re.compile(r"[^a-z0-9]+")
_SUMMARY_KEYS = ("text", "content", "memory", "summary", "description", "title", "name")

# What a store operation asks of the server: a request, answered with the
# parsed JSON (or a MnemoError thrown in).
Step = Generator[tuple, Any, Any]


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _texts(value: Any, path: str = "") -> Iterable[tuple[str, str]]:
    """The value's strings (and numbers), with where they are."""
    if isinstance(value, str):
        if value.strip():
            yield path, value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        yield path, str(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _texts(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _texts(v, f"{path}[{i}]")


def _matches(item_value: Any, wanted: Any) -> bool:
    """A filter's condition on one field, as LangGraph's stores read it:
    equality (nested dicts and lists field by field), or operators
    ``$eq $ne $gt $gte $lt $lte``."""
    if isinstance(wanted, dict):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(item_value, op, arg) for op, arg in wanted.items())
        return isinstance(item_value, dict) and all(_matches(item_value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(wanted)
            and all(_matches(a, b) for a, b in zip(item_value, wanted, strict=True))
        )
    return item_value == wanted


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return value == arg
    if op == "$ne":
        return value != arg
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(value), float(arg)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise ValueError(f"unsupported filter operator {op!r}: use $eq, $ne, $gt, $gte, $lt or $lte")


def _namespace_matches(ns: tuple[str, ...], cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    part = ns[: len(path)] if cond.match_type == "prefix" else ns[len(ns) - len(path) :]
    if cond.match_type not in ("prefix", "suffix"):
        raise ValueError(f"unsupported match type {cond.match_type!r}")
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


class MnemoStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are typed memories of a mnemo
    workspace.

    ``memory`` is a :class:`~pymnemo.Memory` or :class:`~pymnemo.AsyncMemory`
    (either serves both ``batch`` and ``abatch``). ``memory_type`` is the
    typed memories' kind (user, feedback, project or reference), or a
    function of the namespace that picks it. ``prefix`` starts every
    memory's name (``lg``), so the store's memories are told apart from
    the rest of the workspace's.
    """

    supports_ttl = False

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        *,
        memory_type: str | Callable[[tuple[str, ...]], str] = "user",
        prefix: str = "lg",
    ):
        if not isinstance(memory, _Base):
            raise TypeError("MnemoStore needs a pymnemo.Memory or pymnemo.AsyncMemory")
        slug = _SLUG.sub("-", prefix.lower()).strip("-")
        if not slug or len(slug) > 20:
            raise ValueError("prefix needs letters or digits, 20 at most")
        self._mem = memory
        self._prefix = slug
        self._type = memory_type
        self._sync: SyncTransport | None = memory._transport if isinstance(memory, Memory) else None
        self._async: AsyncTransport | None = memory._transport if isinstance(memory, AsyncMemory) else None

    # ----- the BaseStore interface -----

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._run(self._op(op)) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return [await self._arun(self._op(op)) for op in ops]

    # ----- driving the steps -----

    def _transport_sync(self) -> SyncTransport:
        if self._sync is None:
            self._sync = self._mem._twin_sync()
        return self._sync

    def _transport_async(self) -> AsyncTransport:
        if self._async is None:
            self._async = self._mem._twin_async()
        return self._async

    def _run(self, steps: Step) -> Any:
        t = self._transport_sync()
        try:
            req = next(steps)
            while True:
                status, data = t.request(*req)
                try:
                    answer = self._mem._decode(status, data)
                except Exception as e:  # handed to the step, which may expect it
                    req = steps.throw(e)
                else:
                    req = steps.send(answer)
        except StopIteration as done:
            return done.value

    async def _arun(self, steps: Step) -> Any:
        t = self._transport_async()
        try:
            req = next(steps)
            while True:
                status, data = await t.request(*req)
                try:
                    answer = self._mem._decode(status, data)
                except Exception as e:
                    req = steps.throw(e)
                else:
                    req = steps.send(answer)
        except StopIteration as done:
            return done.value

    # ----- the operations, as steps -----

    def _op(self, op: Op) -> Step:
        _validate(op)
        if isinstance(op, GetOp):
            return self._get(tuple(op.namespace), str(op.key))
        if isinstance(op, PutOp):
            if op.value is None:
                return self._delete(tuple(op.namespace), str(op.key))
            return self._put(tuple(op.namespace), str(op.key), dict(op.value))
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise TypeError(f"unknown store operation {type(op).__name__}")

    def name_of(self, namespace: tuple[str, ...], key: str) -> str:
        """The typed memory's name for an item: readable, and unique to the
        exact namespace and key (a hash of them ends it)."""
        ident = json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))
        digest = hashlib.sha256(ident.encode("utf-8")).hexdigest()[:12]
        readable = _SLUG.sub("-", " ".join((*namespace, key)).lower()).strip("-")
        readable = readable[: 44 - len(self._prefix)].rstrip("-")
        return "-".join(p for p in (self._prefix, readable, digest) if p)

    def _path(self, namespace: tuple[str, ...], key: str) -> str:
        return f"memory/{self.name_of(namespace, key)}.md"

    def _read(self, path: str) -> Step:
        """The item stored in the memory file `path`, or None."""
        try:
            got = yield self._mem._r_get(path, None, None)
        except NotFoundError:
            return None
        return self._parse(got.get("text", ""))

    @staticmethod
    def _parse(text: str) -> dict | None:
        # The last json block that holds an item: the one the store wrote
        # (a value's own text may hold fences too, and lines added after it
        # by hand or by a dream do not matter).
        end = len(text)
        while True:
            start = text.rfind(_OPEN, 0, end)
            if start < 0:
                return None
            body = text[start + len(_OPEN) :]
            close = body.find("\n```")
            try:
                doc = json.loads(body if close < 0 else body[:close])
            except ValueError:
                doc = None
            if isinstance(doc, dict) and {"namespace", "key", "value"} <= doc.keys():
                return doc
            end = start

    @staticmethod
    def _times(doc: dict) -> tuple[datetime, datetime]:
        created = doc.get("created_at") or doc.get("updated_at") or _now().isoformat()
        updated = doc.get("updated_at") or created
        return datetime.fromisoformat(created), datetime.fromisoformat(updated)

    def _item(self, doc: dict) -> Item:
        created, updated = self._times(doc)
        return Item(
            value=doc["value"],
            key=doc["key"],
            namespace=tuple(doc["namespace"]),
            created_at=created,
            updated_at=updated,
        )

    def _hit(self, doc: dict, score: float | None) -> SearchItem:
        created, updated = self._times(doc)
        return SearchItem(
            namespace=tuple(doc["namespace"]),
            key=doc["key"],
            value=doc["value"],
            created_at=created,
            updated_at=updated,
            score=score,
        )

    def _get(self, namespace: tuple[str, ...], key: str) -> Step:
        doc = yield from self._read(self._path(namespace, key))
        if doc is None or tuple(doc["namespace"]) != namespace or doc["key"] != key:
            return None
        return self._item(doc)

    def _put(self, namespace: tuple[str, ...], key: str, value: dict) -> Step:
        name = self.name_of(namespace, key)
        old = yield from self._read(f"memory/{name}.md")
        now = _now().isoformat()
        created = old.get("created_at", now) if old else now
        doc = {
            "namespace": list(namespace),
            "key": key,
            "value": value,
            "created_at": created,
            "updated_at": now,
        }
        kind = self._type(namespace) if callable(self._type) else self._type
        yield self._mem._r_write(
            self._render(doc), name, kind, self._describe(namespace, key, value), None, True, "typed"
        )
        return None

    def _delete(self, namespace: tuple[str, ...], key: str) -> Step:
        try:
            yield self._mem._r_forget(self.name_of(namespace, key))
        except NotFoundError:
            pass
        return None

    def _all(self) -> Step:
        """Every item of this store, newest first."""
        view = yield self._mem._r_inspect_memory(None)
        lead = self._prefix + "-"
        docs = []
        for f in view.get("files", []):
            if f.get("kind") != "typed" or not str(f.get("name") or "").startswith(lead):
                continue
            doc = yield from self._read(f["path"])
            if doc is not None:
                docs.append(doc)
        docs.sort(key=lambda d: d.get("updated_at") or "", reverse=True)
        return docs

    def _search(self, op: SearchOp) -> Step:
        prefix = tuple(op.namespace_prefix)
        offset, limit = max(op.offset, 0), max(op.limit, 0)

        def keep(doc: dict) -> bool:
            if tuple(doc["namespace"][: len(prefix)]) != prefix:
                return False
            return not op.filter or all(_matches(doc["value"].get(k), v) for k, v in op.filter.items())

        if not op.query:
            docs = [d for d in (yield from self._all()) if keep(d)]
            return [self._hit(d, None) for d in docs[offset : offset + limit]]

        wanted = offset + limit
        found = yield self._mem._r_search(op.query, min(100, max(10, wanted * 3)), None, None, None, None)
        lead = f"memory/{self._prefix}-"
        best: dict[str, float] = {}
        for hit in found.get("results", []):
            path = hit.get("path", "")
            if hit.get("source") == "memory" and path.startswith(lead):
                best.setdefault(path, float(hit.get("score", 0.0)))
        out: list[SearchItem] = []
        for path, score in best.items():
            doc = yield from self._read(path)
            if doc is not None and keep(doc):
                out.append(self._hit(doc, score))
                if len(out) >= wanted:
                    break
        return out[offset : offset + limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> Step:
        docs = yield from self._all()
        spaces = {tuple(d["namespace"]) for d in docs}
        if op.match_conditions:
            spaces = {s for s in spaces if all(_namespace_matches(s, c) for c in op.match_conditions)}
        if op.max_depth is not None:
            spaces = {s[: op.max_depth] for s in spaces}
        return sorted(spaces)[op.offset : op.offset + op.limit]

    # ----- the memory file -----

    @staticmethod
    def _describe(namespace: tuple[str, ...], key: str, value: dict) -> str:
        summary = next(
            (value[k] for k in _SUMMARY_KEYS if isinstance(value.get(k), str) and value[k].strip()),
            None,
        )
        if summary is None:
            summary = " ".join(t for _, t in _texts(value)) or json.dumps(value, ensure_ascii=False)
        line = " ".join(f"{'/'.join(namespace)}/{key}: {summary}".split())
        return line if len(line) <= 200 else line[:199] + "…"

    @staticmethod
    def _render(doc: dict) -> str:
        lines = [text if path in ("", *_SUMMARY_KEYS) else f"{path}: {text}" for path, text in _texts(doc["value"])]
        data = json.dumps(doc, ensure_ascii=False, indent=None, sort_keys=False)
        readable = "\n".join(lines)
        return (readable + "\n\n" if readable else "") + "```json\n" + data + "\n```\n"

    # ----- sync and async helpers LangGraph does not need -----

    def close(self) -> None:
        """Closes the store's own connections (not the Memory it was given)."""
        if self._sync is not None and self._sync is not getattr(self._mem, "_transport", None):
            self._sync.close()

    async def aclose(self) -> None:
        if self._async is not None and self._async is not getattr(self._mem, "_transport", None):
            await self._async.aclose()
