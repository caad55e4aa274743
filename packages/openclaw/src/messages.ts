// OpenClaw's agent messages (the embedded runner's: `user`, `assistant` with
// text / thinking / toolCall parts, `toolResult`) as mnemo records them: the
// OpenAI chat shape (`user`, `assistant` with `tool_calls`, `tool`).

import type { Message } from "mnemo-memory";

type Part = { type?: string; text?: string; id?: string; name?: string; arguments?: unknown };

interface AgentMessage {
  role?: string;
  content?: unknown;
  timestamp?: number | string;
  toolCallId?: string;
  toolName?: string;
  isError?: boolean;
}

function parts(content: unknown): Part[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? (content.filter((p) => p && typeof p === "object") as Part[]) : [];
}

/** The text of a message's parts (images and other media named, not inlined). */
function text(content: unknown): string {
  return parts(content)
    .map((p) => (p.type === "text" ? (p.text ?? "") : p.type === "image" ? "[image]" : ""))
    .filter((t) => t !== "")
    .join("\n");
}

function timestamp(value: unknown): string | undefined {
  if (typeof value === "number" && Number.isFinite(value)) return new Date(value).toISOString();
  if (typeof value === "string" && !Number.isNaN(Date.parse(value))) return new Date(value).toISOString();
  return undefined;
}

/** One OpenClaw message as mnemo's message, or none for what is not a conversation message. */
export function toMnemo(raw: unknown): Message | undefined {
  if (!raw || typeof raw !== "object") return undefined;
  const m = raw as AgentMessage;
  const at = timestamp(m.timestamp);
  const when = at ? { timestamp: at } : {};
  switch (m.role) {
    case "user": {
      const body = text(m.content);
      return body === "" ? undefined : { role: "user", content: body, ...when };
    }
    case "assistant": {
      const calls = parts(m.content)
        .filter((p) => p.type === "toolCall" && typeof p.name === "string")
        .map((p) => ({
          id: p.id ?? "",
          type: "function",
          function: {
            name: p.name,
            arguments: typeof p.arguments === "string" ? p.arguments : JSON.stringify(p.arguments ?? {}),
          },
        }));
      const body = text(m.content);
      if (body === "" && calls.length === 0) return undefined;
      return {
        role: "assistant",
        content: body === "" ? null : body,
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
        ...when,
      };
    }
    case "toolResult":
    case "tool": {
      const body = text(m.content);
      return {
        role: "tool",
        content: m.isError ? `error: ${body}` : body,
        ...(m.toolCallId ? { tool_call_id: m.toolCallId } : {}),
        ...(m.toolName ? { name: m.toolName } : {}),
        ...when,
      };
    }
    default:
      return undefined;
  }
}

/**
 * The messages of the turn that just ended: from the last user message
 * (the turn's prompt) to the end, as mnemo's messages. `agent_end` hands
 * over the session's messages, earlier turns included.
 */
export function lastTurn(messages: unknown[]): Message[] {
  let start = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if ((messages[i] as AgentMessage | null)?.role === "user") {
      start = i;
      break;
    }
  }
  if (start < 0) return [];
  return messages
    .slice(start)
    .map(toMnemo)
    .filter((m): m is Message => m !== undefined);
}
