// What the tests share: the mnemo binary they run (MNEMO_BIN, else mnemo on
// PATH; missing, the tests fail when CI is set and skip otherwise) and
// scratch workspaces that search on keywords only (no embedding model).

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Memory } from "../dist/index.js";

function findBin() {
  if (process.env.MNEMO_BIN) return process.env.MNEMO_BIN;
  try {
    execFileSync("mnemo", ["--version"], { stdio: "ignore" });
    return "mnemo";
  } catch {
    return undefined;
  }
}

/** The mnemo binary under test, or undefined (outside CI) when there is none. */
export const bin = findBin();
if (!bin && process.env.CI) {
  throw new Error("no mnemo binary: set MNEMO_BIN (or put mnemo on PATH); CI is set, so the tests fail rather than skip");
}
/** For `test(name, skip, fn)`: a reason to skip when there is no binary. */
export const skip = bin ? false : "no mnemo binary (set MNEMO_BIN)";

/** A fresh workspace folder with keyword-only search (`removeWorkspace` takes it away). */
export function makeWorkspace() {
  const dir = mkdtempSync(join(tmpdir(), "mnemo-ts-"));
  writeFileSync(join(dir, "mnemo.toml"), '[embedder]\nkind = "none"\n');
  mkdirSync(join(dir, "memory"), { recursive: true });
  return dir;
}

export function removeWorkspace(dir) {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * A fresh workspace folder with keyword-only search for the test `t`: after
 * it, the servers its `start` started are stopped, then it is removed.
 */
export function workspace(t) {
  const dir = makeWorkspace();
  const started = [];
  t.after(async () => {
    for (const m of started.reverse()) await m.close();
    removeWorkspace(dir);
  });
  return {
    dir,
    async start(options = {}) {
      const m = await Memory.start({ workspace: dir, bin, ...options });
      started.push(m);
      return m;
    },
  };
}

/** True while process `pid` exists. */
export function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
