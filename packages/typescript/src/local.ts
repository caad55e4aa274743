// Starting `mnemo serve` on a local workspace, or attaching to the one it
// announces in `.mnemo/serve.json`.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { StartError } from "./errors.js";

/** How `Memory.start` finds or starts its server. */
export interface StartOptions {
  /** The workspace folder (default: `MNEMO_WORKSPACE`, else `~/.mnemo`, as the CLI). It is created when missing. */
  workspace?: string;
  /** The mnemo binary (default: the `MNEMO_BIN` environment variable, else `mnemo` on PATH). */
  bin?: string;
  /**
   * Configuration overrides, passed as `--set KEY=VALUE`
   * (e.g. `{ "embedder.kind": "none" }`). With any, a server of its own is
   * started rather than one attached to.
   */
  set?: Record<string, string | number | boolean>;
  /** Environment variables for the server (added to this process's). With any, a server of its own is started. */
  env?: Record<string, string | undefined>;
  /** A bearer token the started server will require (`--token`); such a server is never attached to. */
  token?: string;
  /**
   * Use the server the workspace announces when one is up (default: true
   * unless `set`, `env` or `token` is given).
   */
  attach?: boolean;
  /** How long to wait for the server to listen, in milliseconds (default 60000). */
  startTimeoutMs?: number;
  /** Give up on a call after this many milliseconds (default: never). */
  timeoutMs?: number;
}

/** A server `Memory.start` uses: started by it, or attached to. */
export interface LocalServer {
  url: string;
  workspace: string;
  pid: number | undefined;
  started: boolean;
  stop(): Promise<void>;
}

interface Announcement {
  pid: number;
  addr: string;
  root: string;
}

/** Servers started by this process, stopped if it exits without closing them. */
const running = new Set<ChildProcess>();
let exitHook = false;

export async function startLocal(options: StartOptions): Promise<LocalServer> {
  const workspace = resolve(options.workspace ?? process.env.MNEMO_WORKSPACE ?? join(homedir(), ".mnemo"));
  const own = options.set !== undefined || options.env !== undefined || options.token !== undefined;
  if (options.attach ?? !own) {
    const found = await announced(workspace);
    if (found) return found;
  }
  return spawnServer(workspace, options);
}

/** The running server the workspace announces, if it answers. */
async function announced(workspace: string): Promise<LocalServer | undefined> {
  let a: Announcement;
  try {
    a = JSON.parse(readFileSync(join(workspace, ".mnemo", "serve.json"), "utf8")) as Announcement;
    if (a.root !== realpathSync(workspace)) return undefined;
    process.kill(a.pid, 0);
  } catch {
    return undefined;
  }
  const url = `http://${a.addr}`;
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
    if (!res.ok) return undefined;
  } catch {
    return undefined;
  }
  return { url, workspace, pid: a.pid, started: false, stop: async () => {} };
}

function spawnServer(workspace: string, options: StartOptions): Promise<LocalServer> {
  const bin = options.bin ?? (process.env.MNEMO_BIN || "mnemo");
  try {
    mkdirSync(workspace, { recursive: true });
  } catch (e) {
    return Promise.reject(
      new StartError("start_failed", `cannot create the workspace ${workspace}: ${(e as Error).message}`),
    );
  }
  const args = ["serve", "--workspace", workspace, "--http", "127.0.0.1:0"];
  for (const [key, value] of Object.entries(options.set ?? {})) args.push("--set", `${key}=${value}`);
  const env: Record<string, string | undefined> = { ...process.env, ...(options.env ?? {}) };
  if (options.token !== undefined) env.MNEMO_TOKEN = options.token;
  const timeoutMs = options.startTimeoutMs ?? 60_000;

  return new Promise<LocalServer>((done, fail) => {
    let child: ChildProcess;
    try {
      child = spawn(bin, args, { stdio: ["ignore", "ignore", "pipe"], env });
    } catch (e) {
      fail(new StartError("start_failed", `cannot run ${bin}: ${(e as Error).message}`));
      return;
    }
    let stderr = "";
    let settled = false;
    const settle = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      f();
    };
    const timer = setTimeout(() => {
      settle(() => {
        child.kill("SIGKILL");
        fail(new StartError("start_failed", `${bin} serve did not listen within ${timeoutMs} ms${said(stderr)}`));
      });
    }, timeoutMs);

    child.on("error", (e: NodeJS.ErrnoException) => {
      settle(() => {
        const why =
          e.code === "ENOENT"
            ? `the mnemo binary ${JSON.stringify(bin)} was not found: pass \`bin\`, set MNEMO_BIN, or put mnemo on PATH`
            : `cannot run ${bin}: ${e.message}`;
        fail(new StartError("start_failed", why));
      });
    });
    child.on("exit", (code, signal) => {
      running.delete(child);
      settle(() => {
        const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        fail(new StartError("start_failed", `mnemo serve ${how} before it listened${said(stderr)}`));
      });
    });
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      // Keep draining (a full pipe would stall the server), keep the tail.
      stderr = (stderr + chunk).slice(-16_384);
      const m = /listening on (http:\/\/[^\s]+)\s/.exec(stderr);
      if (m && !settled) {
        settle(() => {
          running.add(child);
          hookExit();
          // The server does not keep this process alive; exit stops it.
          child.unref();
          (child.stderr as unknown as { unref?: () => void }).unref?.();
          done({ url: m[1], workspace, pid: child.pid, started: true, stop: () => stopChild(child) });
        });
      }
    });
  });
}

function said(stderr: string): string {
  const t = stderr.trim();
  return t === "" ? " (it printed nothing)" : `: ${t}`;
}

/** Stops a started server: SIGTERM, then SIGKILL if it has not exited within 70 s (it waits up to a minute for memory work). */
function stopChild(child: ChildProcess): Promise<void> {
  running.delete(child);
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 70_000);
    child.once("exit", () => {
      clearTimeout(timer);
      done();
    });
    child.ref();
    child.kill("SIGTERM");
  });
}

function hookExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.on("exit", () => {
    for (const child of running) child.kill("SIGTERM");
  });
}
