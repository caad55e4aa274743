"""The OpenAI Agents SDK's ``Session`` on a mnemo session log.

    from agents import Agent, Runner
    from pymnemo import AsyncMemory
    from pymnemo.openai_agents import MnemoSession

    mem = AsyncMemory(workspace="./agent-memory")
    result = await Runner.run(agent, "Hi, I'm Ada.", session=MnemoSession("user-42", mem))

The conversation is recorded in the workspace's session log of the same
key (``sessions/user-42.jsonl``), so mnemo searches it, shows it in the
inspector, and consolidates it into long-term memory like any other.

Each item is one message of the log, in the chat shape mnemo and its
engine read (a ``function_call`` is an assistant message with a tool
call, its output a ``tool`` message); what the chat shape has no room for
(the item's ``type``, ``id``, ``status``, a reasoning item) rides along in
the message's ``openai_agents`` field, so ``get_items`` gives back the
items as they were added. A session log is append-only and never loses a
message, so ``pop_item`` and ``clear_session`` append a marker (a
``system`` message saying what was withdrawn) and the items behind it are
no longer returned, while the log keeps them. Messages that other
programs appended to the same key (``mnemo chat``, the HTTP API) come back
as items too.

Install with ``pip install 'pymnemo[openai-agents]'``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ._client import AsyncMemory, Memory, _Base
from .errors import NotFoundError

try:
    from agents.memory.session_settings import SessionSettings, resolve_session_limit
except ImportError:  # pragma: no cover - the SDK is this module's extra, but not needed to load it
    SessionSettings = None  # type: ignore[assignment,misc]

    def resolve_session_limit(limit, settings):  # type: ignore[no-redef,misc]
        if limit is not None:
            return limit
        if isinstance(settings, dict):
            return settings.get("limit")
        return getattr(settings, "limit", None)


__all__ = ["MnemoSession", "item_to_message", "message_to_items"]

FIELD = "openai_agents"
_POP = "The message before this one was withdrawn; it is no longer part of the conversation."
_CLEAR = "The conversation was cleared here; what follows starts afresh."


def _plain(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if dump is not None:
        return dump(exclude_unset=True, mode="json")
    raise TypeError(f"a session item is a dict, not {type(item).__name__}")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text")) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def item_to_message(item: Any) -> dict[str, Any]:
    """One Agents SDK input item as one mnemo message (the chat shape, with
    the rest of the item in the ``openai_agents`` field)."""
    item = _plain(item)
    kind = item.get("type")
    role = item.get("role")
    if kind in (None, "message") and role in ("user", "assistant", "system", "developer") and "content" in item:
        rest = {k: v for k, v in item.items() if k != "content"}
        msg: dict[str, Any] = {
            "role": "system" if role == "developer" else role,
            "content": item["content"],
        }
        if rest != {"role": role} or role == "developer":
            msg[FIELD] = {"as": "message", "item": rest}
        return msg
    if kind == "function_call" and isinstance(item.get("call_id"), str) and isinstance(item.get("name"), str):
        rest = {k: v for k, v in item.items() if k not in ("call_id", "name", "arguments")}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": item["call_id"],
                    "type": "function",
                    "function": {"name": item["name"], "arguments": item.get("arguments", "")},
                }
            ],
            FIELD: {"as": "function_call", "item": rest},
        }
    if kind == "function_call_output" and isinstance(item.get("call_id"), str):
        rest = {k: v for k, v in item.items() if k not in ("call_id", "output")}
        return {
            "role": "tool",
            "tool_call_id": item["call_id"],
            "content": item.get("output"),
            FIELD: {"as": "function_call_output", "item": rest},
        }
    # Anything else (reasoning, web or file search calls, computer use, ...):
    # kept whole; the message says what it was, for mnemo's readers.
    summary = _text(item.get("content")) or " ".join(
        _text(s.get("text") if isinstance(s, dict) else s) for s in item.get("summary") or []
    )
    return {
        "role": "assistant",
        "content": f"[{kind or 'item'}] {summary}".strip(),
        FIELD: {"as": "item", "item": item},
    }


def message_to_items(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """The Agents SDK items of one mnemo message: the item it was made
    from, or, for a message another program wrote, its chat shape read as
    items (text, then one ``function_call`` per tool call)."""
    meta = msg.get(FIELD)
    if isinstance(meta, dict) and isinstance(meta.get("item"), dict):
        rest = dict(meta["item"])
        how = meta.get("as")
        if how == "message":
            rest["content"] = msg.get("content")
            return [rest]
        if how == "function_call":
            call = (msg.get("tool_calls") or [{}])[0]
            fn = call.get("function") or {}
            return [{**rest, "call_id": call.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments", "")}]
        if how == "function_call_output":
            return [{**rest, "call_id": msg.get("tool_call_id"), "output": msg.get("content")}]
        if how == "item":
            return [rest]
    role = msg.get("role")
    content = msg.get("content")
    if role == "tool":
        return [
            {
                "type": "function_call_output",
                "call_id": msg.get("tool_call_id") or "",
                "output": content if isinstance(content, (str, list)) else "",
            }
        ]
    items: list[dict[str, Any]] = []
    if content not in (None, "", []):
        items.append({"role": role, "content": content})
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        args = fn.get("arguments", "")
        if not isinstance(args, str):
            import json

            args = json.dumps(args)
        items.append({"type": "function_call", "call_id": call.get("id"), "name": fn.get("name"), "arguments": args})
    return items


def fold(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session's items: every message's, less those a marker withdrew."""
    items: list[dict[str, Any]] = []
    for m in messages:
        meta = m.get(FIELD)
        how = meta.get("as") if isinstance(meta, dict) else None
        if how == "pop":
            if items:
                items.pop()
        elif how == "clear":
            items.clear()
        else:
            items.extend(message_to_items(m))
    return items


class MnemoSession:
    """An OpenAI Agents SDK session (it implements the SDK's ``Session``
    protocol) kept in the mnemo session log ``session_id`` (``key=`` names
    another log).

    ``memory`` is an :class:`~pymnemo.AsyncMemory` (its requests run on the
    event loop) or a :class:`~pymnemo.Memory` (run in a worker thread).
    ``session_settings`` is the SDK's ``SessionSettings`` (``limit``: how
    many of the newest items ``get_items`` gives by default).
    """

    def __init__(
        self,
        session_id: str,
        memory: AsyncMemory | Memory,
        *,
        key: str | None = None,
        session_settings: Any = None,
    ):
        if not isinstance(memory, _Base):
            raise TypeError("MnemoSession needs a pymnemo.AsyncMemory or pymnemo.Memory")
        self.session_id = session_id
        self.key = key or session_id
        self.memory = memory
        if session_settings is None and SessionSettings is not None:
            session_settings = SessionSettings()
        elif isinstance(session_settings, dict) and SessionSettings is not None:
            session_settings = SessionSettings(**session_settings)
        self.session_settings = session_settings

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self.memory, name)
        if isinstance(self.memory, AsyncMemory):
            return await method(*args, **kwargs)
        return await asyncio.to_thread(method, *args, **kwargs)

    async def _items(self) -> list[dict[str, Any]]:
        try:
            log = await self._call("session_history", self.key)
        except NotFoundError:
            return []
        return fold(log.get("messages", []))

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation's items, oldest first (the newest ``limit`` of them)."""
        items = await self._items()
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return items

    async def add_items(self, items: list[Any]) -> None:
        """Appends items to the conversation (one request, whatever their number)."""
        if not items:
            return
        await self._call("append", self.key, [item_to_message(i) for i in items])

    async def pop_item(self) -> Any | None:
        """Withdraws the newest item and returns it (None when there is none)."""
        items = await self._items()
        if not items:
            return None
        await self._call("append", self.key, {"role": "system", "content": _POP, FIELD: {"as": "pop"}})
        return items[-1]

    async def clear_session(self) -> None:
        """Starts the conversation afresh; the log keeps what was said."""
        if not await self._items():
            return
        await self._call("append", self.key, {"role": "system", "content": _CLEAR, FIELD: {"as": "clear"}})
