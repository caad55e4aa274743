// The part of OpenClaw's plugin API (2026.9.6) this plugin uses, written
// down structurally: the `openclaw` package itself is a 600 MB install on
// Node 24 that a plugin does not need at run time (the host hands `api` in).
// Names and shapes follow its plugin SDK (`MemoryPluginCapability`,
// `MemorySearchManager`, `PluginHookAgentEndEvent`, ...).

export interface Logger {
  debug?(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** What a tool answers: text for the model, `details` for the host. */
export interface ToolResult {
  content: Array<{ type: "text"; text: string }>;
  details?: unknown;
}

export interface Tool {
  name: string;
  label?: string;
  description: string;
  parameters: Record<string, unknown>;
  execute(toolCallId: string, params: unknown, signal?: AbortSignal): Promise<ToolResult>;
}

/** The context a tool factory gets for the turn it serves. */
export interface ToolContext {
  agentId?: string;
  sessionKey?: string;
  sessionId?: string;
  workspaceDir?: string;
}

export interface HookContext {
  agentId?: string;
  sessionKey?: string;
  sessionId?: string;
  workspaceDir?: string;
  trigger?: string;
  runId?: string;
}

export interface AgentEndEvent {
  runId?: string;
  messages: unknown[];
  success: boolean;
  error?: string;
  durationMs?: number;
}

/** commander's Command, as far as a plugin CLI uses it. */
export interface Command {
  command(name: string): Command;
  description(text: string): Command;
  argument(spec: string, description?: string): Command;
  option(flags: string, description?: string, parse?: (value: string) => unknown): Command;
  action(fn: (...args: any[]) => unknown): Command;
}

/** `MemorySource` */
export type MemorySource = "memory" | "sessions";

/** `MemorySearchResult`: one hit as OpenClaw's memory surfaces show it. */
export interface MemorySearchResult {
  path: string;
  startLine: number;
  endLine: number;
  score: number;
  textScore?: number;
  vectorScore?: number;
  snippet: string;
  source: MemorySource;
  citation?: string;
}

export interface MemoryReadResult {
  status: "ok" | "not_found";
  text: string;
  path: string;
  truncated?: boolean;
  from?: number;
  lines?: number;
  nextFrom?: number;
}

export interface MemoryProviderStatus {
  backend: "builtin";
  provider: string;
  model?: string;
  files?: number;
  chunks?: number;
  dirty?: boolean;
  workspaceDir?: string;
  dbPath?: string;
  sources?: MemorySource[];
  vector?: { enabled: boolean; available?: boolean; dims?: number };
  custom?: Record<string, unknown>;
}

export interface MemoryEmbeddingProbeResult {
  ok: boolean;
  error?: string;
  checked?: boolean;
}

/** `MemorySearchManager`: search, read and status over one agent's memory. */
export interface MemorySearchManager {
  search(
    query: string,
    opts?: { maxResults?: number; minScore?: number; sessionKey?: string; sources?: MemorySource[]; signal?: AbortSignal },
  ): Promise<MemorySearchResult[]>;
  readFile(params: { relPath: string; from?: number; lines?: number }): Promise<MemoryReadResult>;
  status(): MemoryProviderStatus;
  probeEmbeddingAvailability(): Promise<MemoryEmbeddingProbeResult>;
  probeVectorAvailability(): Promise<boolean>;
  close?(): Promise<void>;
}

/** `MemoryPluginRuntime` */
export interface MemoryPluginRuntime {
  getMemorySearchManager(params: {
    cfg: unknown;
    agentId: string;
    purpose?: "default" | "status" | "cli";
  }): Promise<{ manager: MemorySearchManager | null; error?: string }>;
  resolveMemoryBackendConfig(params: { cfg: unknown; agentId: string }): { backend: "builtin" };
  authorizeSearchHits?(params: {
    cfg: unknown;
    agentId: string;
    requesterSessionKey: string | undefined;
    sandboxed: boolean;
    hits: MemorySearchResult[];
  }): Promise<MemorySearchResult[]>;
  supportsWorkspaceMemoryReadSources?: true;
  classifyWorkspaceMemoryPaths?(params: {
    cfg: unknown;
    agentId: string;
    workspaceDir: string;
    relativePaths: string[];
  }): Promise<Array<{ relativePath: string; originClass: "owner" | "agent" | "untrusted" | "system" }>>;
  closeAllMemorySearchManagers?(): Promise<void>;
}

/** `MemoryPluginCapability` */
export interface MemoryPluginCapability {
  promptBuilder?: (params: {
    availableTools: Set<string>;
    citationsMode?: "auto" | "on" | "off";
    agentId?: string;
    agentSessionKey?: string;
  }) => string[];
  runtime?: MemoryPluginRuntime;
  deterministicRecallToolName?: string;
}

/** The `api` a plugin's `register` gets. */
export interface PluginApi {
  id: string;
  pluginConfig?: Record<string, unknown>;
  logger: Logger;
  registrationMode?: string;
  registerTool(factory: (ctx: ToolContext) => Tool | null, options: { names: string[] }): void;
  registerMemoryCapability(capability: MemoryPluginCapability): void;
  registerCli(
    register: (ctx: { program: Command }) => void | Promise<void>,
    options: { descriptors: Array<{ name: string; description: string; hasSubcommands: boolean }> },
  ): void;
  on(hook: "agent_end", handler: (event: AgentEndEvent, ctx: HookContext) => Promise<void> | void): void;
  on(hook: "gateway_stop", handler: () => Promise<void> | void): void;
}

/** What a plugin module exports (`definePluginEntry`'s result). */
export interface PluginEntry {
  id: string;
  name: string;
  description: string;
  kind: "memory";
  configSchema?: Record<string, unknown>;
  register(api: PluginApi): void;
}
