// The client against a real `mnemo serve`: every operation, and the
// errors a caller meets.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  ConfigError,
  ForbiddenError,
  InvalidInputError,
  Memory,
  MnemoError,
  NotFoundError,
} from "../dist/index.js";
import { bin, makeWorkspace, removeWorkspace, skip } from "./helpers.mjs";

describe("operations", { skip }, () => {
  let memory;
  let dir;

  before(async () => {
    dir = makeWorkspace();
    memory = await Memory.start({ workspace: dir, bin });
  });
  after(async () => {
    await memory?.close();
    removeWorkspace(dir);
  });

  test("appendMessages records one message or many, and sessionHistory reads them back", async () => {
    const one = await memory.appendMessages("chat:ada", { role: "user", content: "Hi, I am Ada and I live in Lyon" });
    assert.deepEqual(one, { key: "chat:ada", appended: 1, messages: 1 });
    const many = await memory.appendMessages("chat:ada", [
      { role: "assistant", content: "Nice to meet you, Ada." },
      { role: "user", content: "I drink green tea, no sugar." },
    ]);
    assert.equal(many.appended, 2);
    assert.equal(many.messages, 3);

    const history = await memory.sessionHistory("chat:ada");
    assert.equal(history.key, "chat:ada");
    assert.equal(history.total, 3);
    assert.equal(history.last_consolidated, 0);
    assert.deepEqual(
      history.messages.map((m) => [m.role, m.content]),
      [
        ["user", "Hi, I am Ada and I live in Lyon"],
        ["assistant", "Nice to meet you, Ada."],
        ["user", "I drink green tea, no sugar."],
      ],
    );
    const tail = await memory.sessionHistory("chat:ada", { since_cursor: true });
    assert.equal(tail.messages.length, 3);
  });

  test("sessions lists every session with its log", async () => {
    await memory.appendMessages("other", [{ role: "user", content: "deploys happen on Fridays" }]);
    const { sessions } = await memory.sessions();
    const keys = sessions.map((s) => s.key).sort();
    assert.deepEqual(keys, ["chat:ada", "other"]);
    const ada = sessions.find((s) => s.key === "chat:ada");
    assert.equal(ada.messages, 3);
    assert.match(ada.file, /^sessions\/.+\.jsonl$/);
  });

  test("search finds what was said, and get opens a hit's citation", async () => {
    const found = await memory.search("green tea");
    assert.equal(found.mode, "keyword");
    assert.ok(found.results.length > 0, "no hits");
    const hit = found.results[0];
    assert.equal(hit.source, "sessions");
    assert.equal(hit.session_key, "chat:ada");
    assert.match(hit.snippet, /green tea/);
    assert.equal(hit.citation, `${hit.path}#L${hit.start_line}-L${hit.end_line}`);

    const lines = await memory.get(hit.citation);
    assert.equal(lines.path, hit.path);
    assert.equal(lines.from, hit.start_line);
    assert.match(lines.text, /green tea/);

    const limited = await memory.search("Ada", { max_results: 1, explain: true });
    assert.equal(limited.results.length, 1);
    assert.ok(limited.results[0].parts, "explain gives the score's parts");
    const asArgs = await memory.search({ query: "Fridays" });
    assert.equal(asArgs.results[0].session_key, "other");
  });

  test("write saves to the daily log, a typed memory and a MEMORY.md section", async () => {
    const daily = await memory.write("Ada prefers short answers");
    assert.equal(daily.mode, "daily");
    assert.match(daily.path, /^memory\/\d{4}-\d{2}-\d{2}\.md$/);
    assert.equal(daily.written, 1);

    const typed = await memory.write("Ada indents with tabs", { name: "indent", type: "user" });
    assert.equal(typed.mode, "typed");
    assert.equal(typed.path, "memory/indent.md");
    assert.equal(typed.action, "created");

    const section = await memory.write({ text: "- Ada lives in Lyon", heading: "About Ada" });
    assert.equal(section.mode, "memory_section");
    assert.equal(section.path, "MEMORY.md");
    const core = await memory.get("MEMORY.md");
    assert.match(core.text, /## About Ada\n+- Ada lives in Lyon/);

    const hits = await memory.search("short answers");
    assert.ok(hits.results.some((h) => h.source === "memory" && h.path === daily.path));
    const part = await memory.get(daily.path, { from: 1, lines: 1 });
    assert.equal(part.lines, 1);
  });

  test("memoryHistory and forget work on a typed memory", async () => {
    await memory.write("Ada's editor is Helix", { name: "editor", type: "user" });
    await memory.write("Ada's editor is Zed", { name: "editor", type: "user", replace: true });
    const history = await memory.memoryHistory("editor");
    assert.equal(history.name, "editor");
    assert.ok(history.changes.length >= 2, JSON.stringify(history));
    const removed = await memory.forget("editor");
    assert.equal(removed.removed, "memory/editor.md");
    await assert.rejects(memory.forget("editor"), (e) => e instanceof NotFoundError && e.code === "not_found");
  });

  test("dream folds an old daily log into facts, and undo('dream') reverses it", async () => {
    writeFileSync(join(dir, "memory", "2026-01-05.md"), "# 2026-01-05\n\n- Ada adopted a cat named Miso.\n");
    const dream = await memory.dream();
    assert.equal(typeof dream.id, "string");
    assert.equal(dream.changed, true);
    assert.deepEqual(dream.folded_logs, ["memory/2026-01-05.md"]);
    assert.ok(dream.added.length >= 1);
    const undone = await memory.undo("dream");
    assert.equal(undone.what, "dream");
    assert.equal(undone.undone, dream.id);
    await assert.rejects(memory.undo({ what: "dream" }), NotFoundError);
    await assert.rejects(memory.undo(), (e) => e.code === "not_found" && /consolidation/.test(e.message));
  });

  test("context shows the next request, with the notes of what it lacks", async () => {
    const ctx = await memory.context("chat:ada", "what do I drink?");
    assert.ok(Array.isArray(ctx.notes));
    assert.equal(ctx.key, "chat:ada");
    const bare = await memory.context("chat:ada");
    assert.ok(Array.isArray(bare.notes));
  });

  test("operations that need a chat model say so when the server has none", async () => {
    for (const call of [
      () => memory.consolidate("chat:ada"),
      () => memory.compact("chat:ada", { level: 5 }),
      () => memory.closeSession("chat:ada"),
      () => memory.turn("chat:ada", "hello"),
    ]) {
      await assert.rejects(call(), (e) => {
        assert.ok(e instanceof ConfigError, `${e.name}: ${e.message}`);
        assert.equal(e.code, "config");
        assert.equal(e.status, 501);
        assert.match(e.message, /no chat model is configured/);
        return true;
      });
    }
    const work = await memory.memoryWork("chat:ada");
    assert.equal(work.key, "chat:ada");
  });

  test("bad input is a typed error naming mnemo's code, without HTTP internals", async () => {
    await assert.rejects(memory.search(""), (e) => {
      assert.ok(e instanceof InvalidInputError);
      assert.ok(e instanceof MnemoError);
      assert.equal(e.name, "InvalidInputError");
      assert.equal(e.code, "invalid_input");
      assert.equal(e.status, 400);
      assert.match(e.message, /query/);
      assert.equal(e.cause, undefined);
      return true;
    });
    await assert.rejects(memory.get("../../etc/passwd"), (e) => {
      assert.ok(e instanceof ForbiddenError);
      assert.equal(e.code, "forbidden");
      assert.match(e.message, /may not leave the workspace/);
      return true;
    });
    await assert.rejects(memory.search("x", { max_results: 1000 }), InvalidInputError);
    // An argument the document does not have (past the types, as plain JavaScript can send it).
    await assert.rejects(memory.write({ text: "x", colour: "red" }), (e) => {
      assert.equal(e.code, "invalid_input");
      assert.match(e.message, /colour/);
      return true;
    });
    await assert.rejects(memory.memoryHistory("f999"), NotFoundError);
    await assert.rejects(memory.appendMessages("", []), (e) => e.code === "invalid_input");
  });

  test("indexStatus shows the index a search brought up to date", async () => {
    await memory.search("Ada");
    const { status } = await memory.indexStatus();
    assert.equal(status.mode, "keyword");
    assert.equal(status.dirty, false);
    assert.ok(status.files >= 1, JSON.stringify(status));
  });

  test("health names the server's version", async () => {
    const health = await memory.health();
    assert.equal(health.status, "ok");
    assert.match(health.version, /^\d+\.\d+\.\d+/);
  });
});
