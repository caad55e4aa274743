// The plugin in a real OpenClaw 2026.9.6 (installed by test.sh with Node
// 24.22.3) against a real `mnemo serve`: `openclaw memory search` answers
// with mnemo's hits and citations, and an agent turn (its model a scripted
// server on loopback) recalls through memory_search / memory_get and is
// recorded into a mnemo session.
//
// Needs OPENCLAW_NODE (Node 24), OPENCLAW_ENTRY (openclaw.mjs), MNEMO_BIN and
// python3; without them the tests skip, unless CI is set: then they fail.

import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { Memory } from "mnemo-memory";

const here = dirname(fileURLToPath(import.meta.url));
const pluginDir = join(here, "..");
// The scripted model server the project's OpenClaw fixtures were made with.
const loopbackModel = join(pluginDir, "..", "..", "crates", "import", "tests", "peers", "loopback_model.py");

function python() {
  try {
    execFileSync("python3", ["--version"], { stdio: "ignore" });
    return "python3";
  } catch {
    return undefined;
  }
}

const need = {
  OPENCLAW_NODE: process.env.OPENCLAW_NODE,
  OPENCLAW_ENTRY: process.env.OPENCLAW_ENTRY,
  MNEMO_BIN: process.env.MNEMO_BIN,
  python3: python(),
};
const missing = Object.entries(need)
  .filter(([, v]) => !v)
  .map(([k]) => k);
if (missing.length && process.env.CI) {
  throw new Error(`missing ${missing.join(", ")} (run packages/openclaw/test.sh); CI is set, so this fails rather than skips`);
}
const skip = missing.length ? `missing ${missing.join(", ")} (run test.sh)` : false;

/** Runs `openclaw ARGS` in the throwaway home; resolves with its exit code and output. */
function openclaw(home, args, { timeoutMs = 240_000 } = {}) {
  return new Promise((resolve, reject) => {
    // Nothing but loopback: no update checks, no mDNS announcements.
    const env = {
      ...process.env,
      HOME: home,
      OPENCLAW_NO_AUTO_UPDATE: "1",
      OPENCLAW_DISABLE_BONJOUR: "1",
      OPENCLAW_NO_PROMPT: "1",
      NO_COLOR: "1",
      FORCE_COLOR: "0",
    };
    delete env.MNEMO_TOKEN;
    delete env.MNEMO_WORKSPACE;
    const child = spawn(need.OPENCLAW_NODE, [need.OPENCLAW_ENTRY, ...args], { cwd: home, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`openclaw ${args.join(" ")} did not finish within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The JSON object a command printed on stdout (OpenClaw may print notices around it). */
function jsonOf(stdout) {
  const start = stdout.indexOf("{");
  const end = stdout.lastIndexOf("}");
  assert.ok(start >= 0 && end > start, `no JSON in:\n${stdout}`);
  return JSON.parse(stdout.slice(start, end + 1));
}

function configPath(home) {
  return join(home, ".openclaw", "openclaw.json");
}

/** Changes OpenClaw's configuration file (as `openclaw config set` would, several keys at once). */
function editConfig(home, change) {
  const config = JSON.parse(readFileSync(configPath(home), "utf8"));
  change(config);
  writeFileSync(configPath(home), JSON.stringify(config, null, 2));
  return config;
}

/** The scripted model on loopback as OpenClaw's only model, and the memory tools in its tool list. */
function useLoopbackModel(config, port) {
  config.models = {
    mode: "merge",
    providers: {
      scripted: {
        baseUrl: `http://127.0.0.1:${port}/v1`,
        apiKey: "test-key",
        api: "openai-completions",
        models: [
          {
            id: "scripted-model",
            name: "Scripted",
            reasoning: false,
            input: ["text"],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
            contextWindow: 128000,
            maxTokens: 4096,
          },
        ],
      },
    },
  };
  config.agents = { ...config.agents, defaults: { model: { primary: "scripted/scripted-model" } } };
  // The memory tools in the model's tool list, not behind Tool Search.
  config.tools = { ...config.tools, toolSearch: false };
}

describe("OpenClaw with the mnemo memory plugin", { skip }, () => {
  let home;
  let workspace;
  let memory;
  let model;
  let port;
  let requests;

  before(async () => {
    home = mkdtempSync(join(tmpdir(), "openclaw-mnemo-"));
    workspace = join(home, "mnemo");
    mkdirSync(join(workspace, "memory"), { recursive: true });
    writeFileSync(join(workspace, "mnemo.toml"), '[embedder]\nkind = "none"\n');
    writeFileSync(
      join(workspace, "memory", "2026-11-30.md"),
      "# 2026-11-30\n\n- Ada drinks green tea, no sugar.\n- Ada lives in Lyon.\n",
    );
    // The server the plugin attaches to (the workspace announces it).
    memory = await Memory.start({ workspace, bin: need.MNEMO_BIN });
    await memory.appendMessages("telegram:ada", [
      { role: "user", content: "My bike is a blue Brompton." },
      { role: "assistant", content: "A blue Brompton, noted." },
    ]);

    // model.script.json scripts the turn; its tool call ids are letters and
    // digits only, as OpenClaw passes nothing else through to the model.
    requests = join(home, "requests.jsonl");
    model = spawn(need.python3, [loopbackModel, join(here, "model.script.json"), requests], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    port = await new Promise((resolve, reject) => {
      model.on("error", reject);
      model.on("exit", (code) => reject(new Error(`the loopback model exited (${code})`)));
      model.stdout.once("data", (d) => resolve(Number(String(d).trim())));
    });

    // The README's quick start: link this folder as a plugin (it takes the
    // memory slot), let it see conversations, point it at the workspace.
    const install = await openclaw(home, ["plugins", "install", "--link", pluginDir, "--force", "--accept-capabilities"]);
    assert.equal(install.code, 0, install.stdout + install.stderr);
    for (const [key, value] of [
      ["plugins.entries.mnemo.hooks.allowConversationAccess", "true"],
      ["plugins.entries.mnemo.config.workspace", workspace],
    ]) {
      const set = await openclaw(home, ["config", "set", key, value]);
      assert.equal(set.code, 0, set.stdout + set.stderr);
    }
    const config = editConfig(home, (c) => {
      useLoopbackModel(c, port);
      // The binary under test (users have mnemo on PATH).
      c.plugins.entries.mnemo.config.bin = need.MNEMO_BIN;
    });
    assert.equal(config.plugins.slots.memory, "mnemo");
    assert.ok(config.plugins.load.paths.includes(pluginDir), JSON.stringify(config.plugins));
  });

  after(async () => {
    model?.kill();
    await memory?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test("openclaw memory search returns mnemo's hits with mnemo's citations", async () => {
    const expected = await memory.search("green tea");
    assert.ok(expected.results.length > 0);

    const run = await openclaw(home, ["memory", "search", "green tea", "--json"]);
    assert.equal(run.code, 0, run.stderr);
    const answer = jsonOf(run.stdout);
    assert.equal(answer.provider, "mnemo");
    assert.deepEqual(
      answer.results.map((r) => [r.citation, r.score, r.snippet, r.source]),
      expected.results.map((h) => [h.citation, h.score, h.snippet, h.source]),
    );
    assert.equal(answer.results[0].citation, "memory/2026-11-30.md#L1-L3");
    assert.equal(answer.results[0].startLine, 1);
    assert.equal(answer.results[0].endLine, 3);

    // The human form: each hit's score and citation, then its snippet.
    const human = await openclaw(home, ["memory", "search", "Brompton"]);
    assert.equal(human.code, 0, human.stderr);
    const [hit] = (await memory.search("Brompton")).results;
    assert.equal(hit.source, "sessions");
    assert.match(human.stdout, new RegExp(`${hit.score.toFixed(3)} ${hit.citation.replace(/[.#]/g, "\\$&")}`));
    assert.match(human.stdout, /blue Brompton/);
  });

  test("openclaw memory status and index show mnemo's server and index", async () => {
    const status = await openclaw(home, ["memory", "status"]);
    assert.equal(status.code, 0, status.stderr);
    assert.ok(status.stdout.includes(`at ${memory.url}`), status.stdout);
    assert.ok(status.stdout.includes(`Workspace: ${workspace}`), status.stdout);
    assert.match(status.stdout, /Search: keyword/);

    const index = await openclaw(home, ["memory", "index"]);
    assert.equal(index.code, 0, index.stderr);
    const { status: state } = await memory.indexStatus();
    assert.ok(index.stdout.includes(`Memory index updated (mnemo): ${state.files} files`), index.stdout);
  });

  test("an agent turn recalls through memory_search and memory_get, and is recorded into a mnemo session", async () => {
    const run = await openclaw(home, ["agent", "--local", "--agent", "main", "--message", "What do I drink? Check your notes."]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /You drink green tea, no sugar\./);

    // What the model was sent: the tools, and mnemo's answers to its calls.
    const sent = readFileSync(requests, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .filter((r) => r.method === "POST" && r.body?.messages);
    const tools = sent[0].body.tools.map((t) => t.function.name);
    assert.ok(tools.includes("memory_search") && tools.includes("memory_get"), tools.join(", "));
    const toolResult = (id) =>
      sent.flatMap((r) => r.body.messages).find((m) => m.role === "tool" && m.tool_call_id === id)?.content;
    const searched = JSON.parse(toolResult("mnemosearch1"));
    assert.equal(searched.provider, "mnemo");
    assert.equal(searched.results[0].citation, "memory/2026-11-30.md#L1-L3");
    const got = JSON.parse(toolResult("mnemoget1"));
    assert.equal(got.status, "ok");
    assert.equal(got.text, "# 2026-11-30\n\n- Ada drinks green tea, no sugar.");

    // The turn, in mnemo.
    const { sessions } = await memory.sessions();
    const key = "openclaw:agent:main:main";
    assert.ok(
      sessions.some((s) => s.key === key),
      `no session ${key}: ${sessions.map((s) => s.key).join(", ")}`,
    );
    const history = await memory.sessionHistory(key);
    assert.deepEqual(
      history.messages.map((m) => [m.role, m.tool_calls?.map((c) => c.function.name).join(",") ?? m.content]),
      [
        ["user", "What do I drink? Check your notes."],
        ["assistant", "memory_search"],
        ["tool", toolResult("mnemosearch1")],
        ["assistant", "memory_get"],
        ["tool", toolResult("mnemoget1")],
        ["assistant", "You drink green tea, no sugar. Source: memory/2026-11-30.md#L1-L3"],
      ],
    );
    // And mnemo finds it among past conversations.
    const found = await memory.search("What do I drink");
    assert.ok(found.results.some((h) => h.session_key === key), JSON.stringify(found.results));
  });

  test("a server given by url and token is used, and a wrong token is named", async (t) => {
    const other = join(home, "mnemo-remote");
    mkdirSync(other, { recursive: true });
    writeFileSync(join(other, "mnemo.toml"), '[embedder]\nkind = "none"\n');
    const remote = await Memory.start({ workspace: other, bin: need.MNEMO_BIN, token: "s3cret" });
    t.after(() => remote.close());
    await remote.write("The office plant is a ficus named Gustave.");

    const local = JSON.parse(readFileSync(configPath(home), "utf8")).plugins.entries.mnemo.config;
    const plugin = (config) => editConfig(home, (c) => (c.plugins.entries.mnemo.config = config));
    plugin({ url: remote.url, token: "s3cret" });
    t.after(() => plugin(local));
    const run = await openclaw(home, ["memory", "search", "ficus", "--json"]);
    assert.equal(run.code, 0, run.stderr);
    const answer = jsonOf(run.stdout);
    assert.deepEqual(
      answer.results.map((r) => r.citation),
      (await remote.search("ficus")).results.map((h) => h.citation),
    );
    assert.match(answer.results[0].snippet, /Gustave/);

    plugin({ url: remote.url, token: "wrong" });
    const denied = await openclaw(home, ["memory", "search", "ficus"]);
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /mnemo: wrong bearer token/);
  });
});
