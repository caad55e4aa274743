// Starting, attaching to and stopping a local `mnemo serve`; remote
// clients, tokens and servers that cannot be reached or started.

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import { ConnectionError, Memory, NotFoundError, StartError, UnauthorizedError } from "../dist/index.js";
import { alive, bin, skip, workspace } from "./helpers.mjs";

test("start runs a server on the workspace, and close stops it", { skip }, async (t) => {
  const { dir, start } = workspace(t);
  const memory = await start();
  assert.equal(memory.started, true);
  assert.equal(memory.workspace, dir);
  assert.match(memory.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  const pid = memory.pid;
  assert.ok(alive(pid));
  assert.ok(existsSync(join(dir, ".mnemo", "serve.json")));
  assert.equal((await memory.health()).status, "ok");
  await memory.close();
  assert.equal(alive(pid), false);
  assert.equal(existsSync(join(dir, ".mnemo", "serve.json")), false);
  await memory.close(); // twice is fine
  await assert.rejects(memory.health(), (e) => e instanceof ConnectionError && e.code === "unreachable");
});

test("start attaches to the server a workspace announces, and leaves it running", { skip }, async (t) => {
  const { start } = workspace(t);
  const first = await start();
  const second = await start();
  assert.equal(second.started, false);
  assert.equal(second.pid, first.pid);
  assert.equal(second.url, first.url);
  await second.appendMessages("s", [{ role: "user", content: "shared server" }]);
  await second.close();
  assert.ok(alive(first.pid));
  assert.equal((await first.sessionHistory("s")).total, 1);

  // Settings of its own: a server of its own.
  const third = await start({ set: { "search.max_results": 3 } });
  assert.equal(third.started, true);
  assert.notEqual(third.pid, first.pid);
});

test("a started server does not outlive a program that forgets close()", { skip }, async (t) => {
  const { dir } = workspace(t);
  const script = `
    import { Memory } from ${JSON.stringify(new URL("../dist/index.js", import.meta.url).href)};
    const m = await Memory.start({ workspace: ${JSON.stringify(dir)}, bin: ${JSON.stringify(bin)} });
    console.log(m.pid);
  `;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  const pid = Number(run.stdout.trim());
  assert.ok(pid > 0, run.stdout);
  for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(alive(pid), false, "the server was left running");
});

test("a server that cannot start says why", { skip }, async (t) => {
  const { dir } = workspace(t);
  await assert.rejects(Memory.start({ workspace: dir, bin, set: { "no.such": "x" } }), (e) => {
    assert.ok(e instanceof StartError);
    assert.equal(e.code, "start_failed");
    assert.match(e.message, /exited with code 2/);
    assert.match(e.message, /unknown setting "no\.such"/);
    return true;
  });
  writeFileSync(join(dir, "mnemo.toml"), "[embedder\nkind = ");
  await assert.rejects(Memory.start({ workspace: dir, bin }), (e) => {
    assert.ok(e instanceof StartError);
    assert.match(e.message, /mnemo\.toml/);
    return true;
  });
  await assert.rejects(Memory.start({ workspace: dir, bin: join(dir, "no-such-mnemo") }), (e) => {
    assert.ok(e instanceof StartError);
    assert.match(e.message, /was not found: pass `bin`, set MNEMO_BIN/);
    return true;
  });
});

test("a token is required by a server started with one, and a wrong one is named", { skip }, async (t) => {
  const { dir, start } = workspace(t);
  const memory = await start({ token: "s3cret" });
  assert.equal(memory.started, true);
  // The started server needs it, and the client sends it.
  assert.equal((await memory.sessions()).sessions.length, 0);
  // No announcement for a server with a token: nobody attaches to it.
  assert.equal(existsSync(join(dir, ".mnemo", "serve.json")), false);

  const wrong = new Memory({ url: memory.url, token: "guess" });
  await assert.rejects(wrong.search("anything"), (e) => {
    assert.ok(e instanceof UnauthorizedError);
    assert.equal(e.code, "unauthorized");
    assert.equal(e.status, 401);
    assert.match(e.message, /wrong bearer token/);
    return true;
  });
  const saved = process.env.MNEMO_TOKEN;
  delete process.env.MNEMO_TOKEN;
  try {
    await assert.rejects(new Memory({ url: memory.url }).sessions(), (e) => {
      assert.ok(e instanceof UnauthorizedError);
      assert.match(e.message, /missing bearer token/);
      return true;
    });
    process.env.MNEMO_TOKEN = "s3cret";
    const fromEnv = new Memory({ url: memory.url });
    assert.deepEqual(await fromEnv.sessions(), { sessions: [] });
  } finally {
    if (saved === undefined) delete process.env.MNEMO_TOKEN;
    else process.env.MNEMO_TOKEN = saved;
  }
});

test("a remote client takes the server's address, /v1 or a workspace's path", { skip }, async (t) => {
  const { start } = workspace(t);
  const local = await start();
  const root = local.url.replace(/\/v1$/, "");
  for (const url of [root, `${root}/`, `${root}/v1`, `${root}/v1/`]) {
    const remote = new Memory({ url });
    assert.equal(remote.url, `${root}/v1`);
    await remote.write("reached over " + url);
  }
  // A multi-workspace server's path: this server has none, and says so.
  const tenant = new Memory({ url: `${root}/v1/workspaces/team-a` });
  assert.equal(tenant.url, `${root}/v1/workspaces/team-a`);
  assert.equal((await tenant.health()).status, "ok");
  await assert.rejects(tenant.sessions(), (e) => e instanceof NotFoundError && /no such endpoint/.test(e.message));
  assert.throws(() => new Memory({ url: "localhost:8767" }), (e) => e.code === "invalid_input");
});

test("a server that is not there is unreachable, not a fetch failure", async () => {
  const port = await new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
  const memory = new Memory({ url: `http://127.0.0.1:${port}` });
  await assert.rejects(memory.search("anything"), (e) => {
    assert.ok(e instanceof ConnectionError);
    assert.equal(e.code, "unreachable");
    assert.equal(e.status, 0);
    assert.match(e.message, /cannot reach mnemo at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    assert.doesNotMatch(e.message, /fetch failed/);
    return true;
  });
});

test("the package is what its manifest exports", () => {
  const pkg = JSON.parse(execFileSync("npm", ["pkg", "get", "name", "type", "engines"], { encoding: "utf8" }));
  assert.equal(pkg.type, "module");
  assert.equal(pkg.engines.node, ">=20");
});
