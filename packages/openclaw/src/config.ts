// The plugin's settings (`plugins.entries.mnemo.config`) and the mnemo
// client they open: a server at `url`, or the local `mnemo serve` of
// `workspace` (attached to when running, started otherwise).

import { homedir } from "node:os";
import { join } from "node:path";
import { Memory } from "mnemo-memory";

export interface MnemoPluginConfig {
  /** A running server: `http://127.0.0.1:8767`, or `https://host/v1/workspaces/ID`. */
  url?: string;
  /** Its bearer token (default: MNEMO_TOKEN). */
  token?: string;
  /** Without `url`: the workspace of a local `mnemo serve` (default: MNEMO_WORKSPACE, else ~/.mnemo). */
  workspace?: string;
  /** Without `url`: the mnemo binary (default: MNEMO_BIN, else mnemo on PATH). */
  bin?: string;
  /** Record each agent turn into a mnemo session (default true). */
  recordTurns?: boolean;
  /** Prefix of the mnemo session keys, before OpenClaw's session key (default "openclaw:"). */
  sessionPrefix?: string;
  /** Hits memory_search returns when the model does not say (default: the workspace's `[search] max_results`). */
  maxResults?: number;
}

export function readConfig(raw: Record<string, unknown> | undefined): MnemoPluginConfig {
  const c = (raw ?? {}) as Record<string, unknown>;
  const str = (k: string) => (typeof c[k] === "string" && c[k] !== "" ? (c[k] as string) : undefined);
  return {
    url: str("url"),
    token: str("token"),
    workspace: str("workspace"),
    bin: str("bin"),
    recordTurns: c.recordTurns === undefined ? true : c.recordTurns === true,
    sessionPrefix: typeof c.sessionPrefix === "string" ? c.sessionPrefix : "openclaw:",
    maxResults: typeof c.maxResults === "number" ? c.maxResults : undefined,
  };
}

function expandHome(path: string): string {
  return path === "~" ? homedir() : path.startsWith("~/") ? join(homedir(), path.slice(2)) : path;
}

/** Where this configuration's memory is, for status lines. */
export function describe(config: MnemoPluginConfig): string {
  if (config.url) return config.url;
  return expandHome(config.workspace ?? process.env.MNEMO_WORKSPACE ?? "~/.mnemo");
}

/**
 * One client per configuration and process, opened on first use: plugin
 * registration runs several times (CLI metadata, discovery, the full load)
 * and must not start servers.
 */
export class Connection {
  #memory: Promise<Memory> | undefined;

  constructor(readonly config: MnemoPluginConfig) {}

  memory(): Promise<Memory> {
    if (!this.#memory) {
      const { url, token, workspace, bin } = this.config;
      const opening = url
        ? Promise.resolve(new Memory({ url, token }))
        : Memory.start({
            workspace: workspace ? expandHome(workspace) : undefined,
            bin: bin ? expandHome(bin) : undefined,
          });
      // A failure is not kept: the next call tries again.
      this.#memory = opening.catch((e) => {
        this.#memory = undefined;
        throw e;
      });
    }
    return this.#memory;
  }

  async close(): Promise<void> {
    const opened = this.#memory;
    this.#memory = undefined;
    if (opened) await (await opened.catch(() => undefined))?.close();
  }
}
