"""Writes the rest of the nanobot fixture through nanobot's own classes.

Run by generate.sh with nanobot's Python, HOME set to the fixture home,
after two real `nanobot agent` turns made the `cli:direct` session.
"""
from pathlib import Path

from nanobot.agent.memory import MemoryStore
from nanobot.session.manager import SessionManager

workspace = Path.home() / ".nanobot" / "workspace"
sessions = SessionManager(workspace)

# A channel session: non-ASCII text, an assistant message that only calls a
# tool (content None, as nanobot's tool-call replies carried before 0.3), its
# result, and channel metadata.
chat = sessions.get_or_create("telegram:42")
chat.add_message("user", "我住在里昂，喜欢喝绿茶。")
chat.add_message("assistant", "记住了：你住在里昂，喜欢绿茶。")
chat.add_message("user", "What time is it in Lyon?")
chat.add_message(
    "assistant",
    None,
    tool_calls=[{
        "id": "call_date1",
        "type": "function",
        "function": {"name": "exec", "arguments": "{\"command\": \"TZ=Europe/Paris date +%H:%M\"}"},
    }],
)
chat.add_message("tool", "05:00", tool_call_id="call_date1", name="exec")
chat.add_message("assistant", "It is 05:00 in Lyon.")
chat.metadata["chat_title"] = "Ada"
sessions.save(chat)

# The first two messages of the CLI session were consolidated (the cursor
# moves as nanobot's Consolidator moves it).
cli = sessions.get_or_create("cli:direct")
cli.last_archived = 2
sessions.save(cli)

memory = MemoryStore(workspace)
memory.write_memory(
    "# Long-term Memory\n\n"
    "## User Information\n\n"
    "- Ada lives in Lyon.\n"
    "- Ada drinks green tea, no sugar.\n\n"
    "## Project Context\n\n"
    "- Ada is planting a vegetable garden this spring.\n"
)
memory.append_history("[permanent] Ada lives in Lyon and drinks green tea.", session_key="cli:direct")
memory.append_history("[ephemeral] Listed the workspace files with exec.", session_key="cli:direct")
memory.append_history("[durable] Ada asked for the time in Lyon; it was 05:00.", session_key="telegram:42")
memory.write_user(
    "# User Profile\n\n"
    "## Basic Information\n\n"
    "- **Name**: Ada\n"
    "- **Timezone**: Europe/Paris (UTC+1)\n"
    "- **Language**: English and Chinese\n\n"
    "## Preferences\n\n"
    "- Brief and concise answers\n"
)
