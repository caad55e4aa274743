// The memory slot's agent tools, answered by mnemo: memory_search (hits with
// mnemo's citations, `path#Lx-Ly`) and memory_get (the lines a citation
// names, from a memory file or a recorded session).

import { MnemoError } from "mnemo-memory";
import type { Connection } from "./config.js";
import type { Tool, ToolResult } from "./openclaw.js";
import { read, search } from "./search.js";

function json(payload: unknown): ToolResult {
  return { content: [{ type: "text", text: JSON.stringify(payload, null, 2) }], details: payload };
}

/** A failure the model can read and tell the user about, rather than a thrown stack. */
function unavailable(e: unknown, extra: Record<string, unknown> = {}): ToolResult {
  const code = e instanceof MnemoError ? e.code : "internal";
  const message = e instanceof Error ? e.message : String(e);
  return json({ ...extra, unavailable: true, error: `mnemo (${code}): ${message}` });
}

function record(params: unknown): Record<string, unknown> {
  return params && typeof params === "object" ? (params as Record<string, unknown>) : {};
}

function positive(value: unknown): number | undefined {
  const n = typeof value === "string" ? Number(value) : value;
  return typeof n === "number" && Number.isInteger(n) && n > 0 ? n : undefined;
}

export function searchTool(conn: Connection): Tool {
  return {
    name: "memory_search",
    label: "Memory Search",
    description:
      "Mandatory recall step: search long-term memory (MEMORY.md, memory/*.md notes and facts) and past conversations " +
      "before answering questions about prior work, decisions, dates, people, preferences, or todos. Each hit has a " +
      "`citation` (path#Lx-Ly): quote it, or open it with memory_get. A hit with `validity` no longer holds: read it as history.",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", description: "What to look for: names, identifiers, topics." },
        maxResults: { type: "integer", minimum: 1, maximum: 100 },
        minScore: { type: "number", minimum: 0, maximum: 1 },
        corpus: {
          type: "string",
          enum: ["all", "memory", "sessions"],
          description: "memory: notes and facts only; sessions: past conversations only; all (default): both.",
        },
        asOf: { type: "string", description: "Answer as of this day (YYYY-MM-DD)." },
      },
      required: ["query"],
      additionalProperties: false,
    },
    async execute(_id, params) {
      const p = record(params);
      const query = typeof p.query === "string" ? p.query.trim() : "";
      if (query === "") return json({ results: [], error: "query is required: give a few words to search for" });
      const corpus = p.corpus === "memory" || p.corpus === "sessions" ? p.corpus : undefined;
      try {
        const memory = await conn.memory();
        const { results, answer } = await search(memory, query, {
          maxResults: positive(p.maxResults) ?? conn.config.maxResults,
          minScore: typeof p.minScore === "number" ? p.minScore : undefined,
          asOf: typeof p.asOf === "string" ? p.asOf : undefined,
          sources: corpus ? [corpus] : undefined,
        });
        return json({
          results,
          provider: "mnemo",
          mode: answer.mode,
          citations: "on",
          ...(answer.warnings.length ? { warnings: answer.warnings } : {}),
          ...(answer.dates?.length ? { dates: answer.dates } : {}),
        });
      } catch (e) {
        return unavailable(e, { results: [] });
      }
    },
  };
}

export function getTool(conn: Connection): Tool {
  return {
    name: "memory_get",
    label: "Memory Get",
    description:
      "Read exact lines of memory: a memory_search hit's citation (path#Lx-Ly) as `path`, or a memory file " +
      "(MEMORY.md, memory/…md) with optional `from` and `lines`. Works for cited conversation logs too. " +
      "status=not_found means the file does not exist.",
    parameters: {
      type: "object",
      properties: {
        path: { type: "string", description: "A citation (memory/2026-01-31.md#L3-L4) or a workspace-relative path." },
        from: { type: "integer", minimum: 1 },
        lines: { type: "integer", minimum: 1 },
      },
      required: ["path"],
      additionalProperties: false,
    },
    async execute(_id, params) {
      const p = record(params);
      const path = typeof p.path === "string" ? p.path.trim() : "";
      if (path === "") return json({ status: "error", error: "path is required: give a citation or a memory file" });
      try {
        const got = await read(await conn.memory(), { relPath: path, from: positive(p.from), lines: positive(p.lines) });
        return json(got);
      } catch (e) {
        const r = unavailable(e, { path });
        (r.details as Record<string, unknown>).status = "error";
        return json(r.details);
      }
    },
  };
}

/** The system prompt's memory section while the tools are there. */
export function promptSection(params: { availableTools: Set<string>; citationsMode?: string }): string[] {
  const search = params.availableTools.has("memory_search");
  const get = params.availableTools.has("memory_get");
  if (!search && !get) return [];
  const lines = ["## Memory Recall"];
  lines.push(
    search
      ? "Before answering anything about prior work, decisions, dates, people, preferences, or todos: run memory_search" +
          (get ? "; open a hit's citation with memory_get to read the lines you need." : ".")
      : "To recall a memory file's lines, run memory_get with its path or a citation.",
  );
  lines.push("A hit whose `validity` says it no longer holds is history, not what is true now. If nothing turns up, say you checked.");
  lines.push(
    params.citationsMode === "off"
      ? "Citations are disabled: do not mention memory paths or line numbers unless the user asks."
      : "Citations: include Source: <path#Lx-Ly> (the hit's citation) when it helps the user verify a memory.",
  );
  lines.push("");
  return lines;
}
