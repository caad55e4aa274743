// mnemo's search hits and reads in OpenClaw's memory shapes, and the
// memory search manager OpenClaw's host surfaces use (status scans,
// trigger recall, other plugins' memory lookups).

import type { Hit, Memory, SearchOutput } from "mnemo-memory";
import type { Connection } from "./config.js";
import { describe } from "./config.js";
import type {
  MemoryProviderStatus,
  MemoryReadResult,
  MemorySearchManager,
  MemorySearchResult,
  MemorySource,
} from "./openclaw.js";

/** A mnemo hit as OpenClaw's `MemorySearchResult`, with mnemo's citation and what else it says. */
export interface MnemoHit extends MemorySearchResult {
  citation: string;
  sessionKey?: string;
  date?: string;
  /** For a fact that no longer holds: since when and what replaced it. */
  validity?: string;
}

export function toHit(hit: Hit): MnemoHit {
  const out: MnemoHit = {
    path: hit.path,
    startLine: hit.start_line,
    endLine: hit.end_line,
    score: hit.score,
    snippet: hit.snippet,
    source: hit.source,
    citation: hit.citation,
  };
  if (hit.session_key) out.sessionKey = hit.session_key;
  if (hit.date) out.date = hit.date;
  if (hit.validity && !hit.validity.current) out.validity = hit.validity.note ?? "no longer true";
  if (hit.parts?.keyword != null) out.textScore = hit.parts.keyword;
  if (hit.parts?.vector != null) out.vectorScore = hit.parts.vector;
  return out;
}

export interface SearchOptions {
  maxResults?: number;
  minScore?: number;
  asOf?: string;
  sources?: MemorySource[];
}

/** mnemo's search, as OpenClaw hits. */
export async function search(
  memory: Memory,
  query: string,
  opts: SearchOptions = {},
): Promise<{ results: MnemoHit[]; answer: SearchOutput }> {
  const answer = await memory.search(query, {
    ...(opts.maxResults !== undefined ? { max_results: opts.maxResults } : {}),
    ...(opts.minScore !== undefined ? { min_score: opts.minScore } : {}),
    ...(opts.asOf ? { as_of: opts.asOf } : {}),
  });
  let results = answer.results.map(toHit);
  if (opts.sources?.length) results = results.filter((h) => opts.sources!.includes(h.source));
  return { results, answer };
}

/** mnemo's `get` as OpenClaw's read result (a citation `path#Lx-Ly` works as a path). */
export async function read(
  memory: Memory,
  params: { relPath: string; from?: number; lines?: number },
): Promise<MemoryReadResult & { totalLines: number; ended?: unknown[] }> {
  const got = await memory.get(params.relPath, {
    ...(params.from !== undefined ? { from: params.from } : {}),
    ...(params.lines !== undefined ? { lines: params.lines } : {}),
  });
  if (got.total_lines === 0) return { status: "not_found", text: "", path: got.path, totalLines: 0 };
  const last = got.from + got.lines - 1;
  const more = last < got.total_lines;
  return {
    status: "ok",
    text: got.text,
    path: got.path,
    from: got.from,
    lines: got.lines,
    totalLines: got.total_lines,
    ...(more ? { truncated: true, nextFrom: last + 1 } : {}),
    ...(got.ended?.length ? { ended: got.ended } : {}),
  };
}

/** What OpenClaw's status surfaces show of mnemo. */
export async function providerStatus(conn: Connection): Promise<MemoryProviderStatus> {
  const memory = await conn.memory();
  const [{ status }, health] = await Promise.all([memory.indexStatus(), memory.health()]);
  const s = status as Record<string, unknown>;
  const num = (k: string) => (typeof s[k] === "number" ? (s[k] as number) : undefined);
  const hybrid = s.mode === "hybrid";
  return {
    backend: "builtin",
    provider: "mnemo",
    ...(typeof s.model === "string" ? { model: s.model } : {}),
    files: num("files"),
    chunks: num("chunks"),
    dirty: s.dirty === true,
    workspaceDir: memory.workspace ?? describe(conn.config),
    ...(typeof s.location === "string" ? { dbPath: s.location } : {}),
    sources: ["memory", "sessions"],
    vector: { enabled: hybrid, available: hybrid, ...(num("dims") ? { dims: num("dims") } : {}) },
    custom: {
      mnemo: {
        url: memory.url,
        version: health.version,
        mode: s.mode,
        backend: s.backend,
        vectors: num("vectors"),
      },
    },
  };
}

/** The manager OpenClaw's memory runtime hands out: every call goes to mnemo. */
export async function manager(conn: Connection): Promise<MemorySearchManager> {
  let status = await providerStatus(conn);
  return {
    async search(query, opts = {}) {
      const memory = await conn.memory();
      const { results } = await search(memory, query, {
        maxResults: opts.maxResults,
        minScore: opts.minScore,
        sources: opts.sources,
      });
      return results;
    },
    async readFile(params) {
      return read(await conn.memory(), params);
    },
    status() {
      return status;
    },
    async probeEmbeddingAvailability() {
      status = await providerStatus(conn);
      const mode = (status.custom?.mnemo as { mode?: string } | undefined)?.mode;
      return mode === "hybrid"
        ? { ok: true, checked: true }
        : { ok: false, checked: true, error: "mnemo searches on keywords only: no embedding model is configured" };
    },
    async probeVectorAvailability() {
      status = await providerStatus(conn);
      return status.vector?.available === true;
    },
  };
}
