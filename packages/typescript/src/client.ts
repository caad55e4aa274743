import { ConnectionError, InvalidInputError, MnemoError } from "./errors.js";
import { startLocal, type LocalServer, type StartOptions } from "./local.js";
import type {
  Answer,
  AppendOutput,
  Body,
  CloseOutput,
  CompactArgs,
  ContextArgs,
  ContextOutput,
  DreamOutput,
  EventsOutput,
  ForgetOutput,
  GetArgs,
  GetOutput,
  HealthOutput,
  HistoryOutput,
  IndexView,
  MemoryHistoryOutput,
  MemoryWorkOutput,
  Message,
  OperationId,
  Query,
  SearchArgs,
  SearchOutput,
  SessionsOutput,
  TurnArgs,
  TurnOutput,
  UndoArgs,
  UndoOutput,
  WriteArgs,
  WriteOutput,
} from "./types.js";

/** How to reach a running server. */
export interface MemoryOptions {
  /**
   * The server: `http://127.0.0.1:8767`, or one workspace of a
   * multi-workspace server, `https://host/v1/workspaces/ID`.
   */
  url: string;
  /** The bearer token (default: the `MNEMO_TOKEN` environment variable). */
  token?: string;
  /** Give up on a call after this many milliseconds (default: never; an agent turn can take long). */
  timeoutMs?: number;
}

type Method = "GET" | "POST";

/** A dream's arguments, as far as the document gives it any. */
type DreamArgs = [Body<"post_memory_dream">] extends [never] ? [] : [options?: Body<"post_memory_dream">];

interface Call {
  query?: Record<string, string | number | boolean | null | undefined>;
  body?: unknown;
}

/**
 * mnemo's memory, over its HTTP API: one method per operation, each
 * answering the type the server's OpenAPI document gives.
 *
 * ```ts
 * const memory = await Memory.start({ workspace: "./memory" });
 * await memory.appendMessages("chat-1", [{ role: "user", content: "I drink green tea" }]);
 * const { results } = await memory.search("what do I drink?");
 * await memory.close();
 * ```
 */
export class Memory {
  /** The API's base: `…/v1`, or `…/v1/workspaces/ID`. */
  readonly url: string;
  readonly #root: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number | undefined;
  #local: LocalServer | undefined;

  /** A client of the running server at `options.url` (nothing is started). */
  constructor(options: MemoryOptions) {
    const { root, base } = splitUrl(options.url);
    this.#root = root;
    this.url = base;
    this.#token = options.token ?? (process.env.MNEMO_TOKEN || undefined);
    this.#timeoutMs = options.timeoutMs;
  }

  /**
   * A client of a local `mnemo serve` on `options.workspace`: the server
   * that workspace announces (`.mnemo/serve.json`) when one is up, else one
   * started from `options.bin`, `MNEMO_BIN` or `mnemo` on PATH. `close()`
   * stops what this started, and only that.
   */
  static async start(options: StartOptions = {}): Promise<Memory> {
    const local = await startLocal(options);
    const memory = new Memory({ url: local.url, token: options.token, timeoutMs: options.timeoutMs });
    memory.#local = local;
    return memory;
  }

  /** The workspace folder, for a client made by `Memory.start`. */
  get workspace(): string | undefined {
    return this.#local?.workspace;
  }

  /** True when `Memory.start` started the server (rather than attaching to a running one). */
  get started(): boolean {
    return this.#local?.started ?? false;
  }

  /** The process id of the server `Memory.start` started or attached to. */
  get pid(): number | undefined {
    return this.#local?.pid;
  }

  /** Stops the server `Memory.start` started (a server it attached to keeps running). */
  async close(): Promise<void> {
    const local = this.#local;
    this.#local = undefined;
    await local?.stop();
  }

  // --- sessions -----------------------------------------------------------

  /** Every session, newest first. */
  async sessions(): Promise<SessionsOutput> {
    return this.#call("get_sessions", "GET", "/sessions");
  }

  /** Appends messages (oldest first) to the session `key`'s log, creating it. */
  async appendMessages(key: string, messages: Message | Message[]): Promise<AppendOutput> {
    const body = Array.isArray(messages) ? { messages } : { message: messages };
    return this.#call("post_sessions_messages", "POST", `/sessions/${enc(key)}/messages`, { body });
  }

  /** A session's messages: all, or with `since_cursor` those not consolidated yet. */
  async sessionHistory(key: string, options: Query<"get_sessions_messages"> = {}): Promise<HistoryOutput> {
    return this.#call("get_sessions_messages", "GET", `/sessions/${enc(key)}/messages`, { query: options });
  }

  /** The request the engine would send for the session's next turn, with the tokens of each part. */
  async context(key: string, message?: string | ContextArgs): Promise<ContextOutput> {
    const body = typeof message === "string" ? { message } : (message ?? {});
    return this.#call("post_sessions_context", "POST", `/sessions/${enc(key)}/context`, { body });
  }

  /** Distils everything past the session's cursor into long-term memory now (needs a chat model). */
  async consolidate(key: string): Promise<EventsOutput> {
    return this.#call("post_sessions_consolidate", "POST", `/sessions/${enc(key)}/consolidate`);
  }

  /** Runs the compaction pipeline, or one `level` of it, on the session. */
  async compact(key: string, options: CompactArgs = {}): Promise<EventsOutput> {
    return this.#call("post_sessions_compact", "POST", `/sessions/${enc(key)}/compact`, { body: options });
  }

  /** Closes the conversation: consolidates its tail and writes a session note (needs a chat model). */
  async closeSession(key: string): Promise<CloseOutput> {
    return this.#call("post_sessions_close", "POST", `/sessions/${enc(key)}/close`);
  }

  /** One agent turn with the memory tools, on the server's chat model. */
  async turn(key: string, message: string | TurnArgs): Promise<TurnOutput> {
    const body = typeof message === "string" ? { message } : message;
    return this.#call("post_sessions_turn", "POST", `/sessions/${enc(key)}/turn`, { body });
  }

  /** The session's memory work after its turns: what it is doing, or what its last run did. */
  async memoryWork(key: string): Promise<MemoryWorkOutput> {
    return this.#call("get_sessions_memory_work", "GET", `/sessions/${enc(key)}/memory-work`);
  }

  // --- memory -------------------------------------------------------------

  /** Searches memory and past sessions; each hit has a `citation` (`path#Lx-Ly`) that `get` opens. */
  async search(query: string | SearchArgs, options: Omit<SearchArgs, "query"> = {}): Promise<SearchOutput> {
    const body = typeof query === "string" ? { ...options, query } : { ...query, ...options };
    return this.#call("post_memory_search", "POST", "/memory/search", { body });
  }

  /** Lines of a memory file or a cited session log (`path` may be a citation `path#Lx-Ly`). */
  async get(path: string, options: Omit<GetArgs, "path"> = {}): Promise<GetOutput> {
    return this.#call("get_memory_get", "GET", "/memory/get", { query: { ...options, path } });
  }

  /** Saves to today's log, a typed memory (`name`) or a section of MEMORY.md (`heading`). */
  async write(text: string | WriteArgs, options: Omit<WriteArgs, "text"> = {}): Promise<WriteOutput> {
    const body = typeof text === "string" ? { ...options, text } : { ...text, ...options };
    return this.#call("post_memory_write", "POST", "/memory/write", { body });
  }

  /** Deletes a typed memory or a fact (`f12`); nothing else is ever deleted. */
  async forget(name: string): Promise<ForgetOutput> {
    return this.#call("post_memory_forget", "POST", "/memory/forget", { body: { name } });
  }

  /** Every recorded change of a memory: a fact's id or a typed memory's name. */
  async memoryHistory(name: string): Promise<MemoryHistoryOutput> {
    return this.#call("get_memory_history", "GET", "/memory/history", { query: { name } });
  }

  /**
   * Tidies long-term memory (memory/facts.md): merges duplicate facts,
   * folds old daily logs in. `undo("dream")` reverses the newest dream.
   */
  async dream(...options: DreamArgs): Promise<DreamOutput> {
    return this.#call("post_memory_dream", "POST", "/memory/dream", { body: (options as unknown[])[0] });
  }

  /** Undoes the newest consolidation of MEMORY.md (or, with `"dream"`, the newest dream; with `"facts"`, the newest round of memory/facts.md) not undone yet. */
  async undo(what: UndoArgs | NonNullable<UndoArgs["what"]> = {}): Promise<UndoOutput> {
    const body = typeof what === "string" ? { what } : what;
    return this.#call("post_memory_undo", "POST", "/memory/undo", { body });
  }

  /**
   * The index's state (backend, model, files, chunks, vectors, whether it
   * is dirty), as the memory inspector shows it. Searches bring the index
   * up to date first.
   */
  async indexStatus(): Promise<IndexView> {
    return this.#call("get_inspect_index", "GET", "/inspect/index");
  }

  /** The server is up: its version. */
  async health(): Promise<HealthOutput> {
    return this.#request<HealthOutput>("GET", "/health", {}, this.#root);
  }

  // --- transport ----------------------------------------------------------

  #call<O extends OperationId>(_op: O, method: Method, path: string, call: Call = {}): Promise<Answer<O>> {
    return this.#request<Answer<O>>(method, path, call);
  }

  async #request<T>(method: Method, path: string, call: Call, base = this.url): Promise<T> {
    const url = new URL(base + path);
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    let body: string | undefined;
    if (method === "POST") {
      // The server takes every POST as JSON, an empty body where it needs none.
      headers["content-type"] = "application/json";
      body = call.body === undefined ? "" : JSON.stringify(call.body);
    }
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers,
        body,
        signal: this.#timeoutMs === undefined ? undefined : AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (e) {
      throw unreachable(e, this.#root, this.#timeoutMs);
    }
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      throw unreachable(e, this.#root, this.#timeoutMs);
    }
    let json: unknown;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const error = (json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
      if (error && typeof error.code === "string") {
        throw MnemoError.fromBody(res.status, error.code, String(error.message ?? error.code));
      }
      throw new ConnectionError(
        "bad_response",
        `${method} ${url.pathname}: ${this.#root} answered ${res.status} ${res.statusText}, not mnemo's JSON: ${snippet(text)}`,
        res.status,
      );
    }
    if (json === undefined) {
      throw new ConnectionError(
        "bad_response",
        `${method} ${url.pathname}: ${this.#root} answered ${res.status} without JSON: ${snippet(text)}`,
        res.status,
      );
    }
    return json as T;
  }
}

/** The server's root (for /health) and the API's base (`…/v1` or `…/v1/workspaces/ID`). */
function splitUrl(raw: string): { root: string; base: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidInputError("invalid_input", `not a URL: ${JSON.stringify(raw)} (give e.g. http://127.0.0.1:8767)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new InvalidInputError("invalid_input", `not an http(s) URL: ${raw}`);
  }
  const path = url.pathname.replace(/\/+$/, "");
  const m = /^(.*?)\/v1(\/workspaces\/[^/]+)?$/.exec(path);
  const root = url.origin + (m ? m[1] : path);
  const base = m ? url.origin + path : root + "/v1";
  return { root, base };
}

function enc(key: string): string {
  if (key === "") throw new InvalidInputError("invalid_input", "the session key is empty");
  return encodeURIComponent(key);
}

function snippet(text: string): string {
  const t = text.trim().replace(/\s+/g, " ");
  return t === "" ? "(empty)" : t.length > 200 ? t.slice(0, 200) + "…" : t;
}

function unreachable(e: unknown, root: string, timeoutMs: number | undefined): MnemoError {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err?.name === "TimeoutError" || err?.name === "AbortError") {
    return new ConnectionError("timeout", `mnemo at ${root} did not answer within ${timeoutMs} ms`);
  }
  const why = err?.cause?.code ?? err?.cause?.message ?? err?.message ?? String(e);
  return new ConnectionError("unreachable", `cannot reach mnemo at ${root} (${why}): is \`mnemo serve\` running there?`);
}
