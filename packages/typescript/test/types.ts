// Compiled, not run (`npm run typecheck`, and test/schema.test.mjs): the
// client's arguments and answers are the OpenAPI document's types, and
// what the document does not allow does not compile.

import {
  Memory,
  MnemoError,
  type DreamOutput,
  type ErrorCode,
  type Hit,
  type Message,
  type SearchOutput,
  type WriteOutput,
} from "../src/index.js";

export async function usage(memory: Memory): Promise<void> {
  const found: SearchOutput = await memory.search("green tea", { max_results: 3, as_of: "2026-01-31" });
  const hit: Hit = found.results[0]!;
  const citation: string = hit.citation;
  const source: "memory" | "sessions" = hit.source;
  const lines = await memory.get(citation, { lines: 2 });
  const text: string = lines.text;

  const message: Message = { role: "user", content: "hello" };
  const appended = await memory.appendMessages("chat", [message]);
  const count: number = appended.messages;

  const written: WriteOutput = await memory.write("a fact", { name: "fact", type: "user" });
  if (written.mode === "typed") {
    const action: "created" | "replaced" | "unchanged" = written.action;
    void action;
  }
  const dream: DreamOutput = await memory.dream();
  const merged: [string, string][] = dream.merged;
  const undone = await memory.undo("dream");
  const what: "consolidation" | "dream" | "facts" = undone.what;
  const history = await memory.sessionHistory("chat", { since_cursor: true });
  const total: number = history.total;

  // @ts-expect-error max_results is a number
  await memory.search("x", { max_results: "3" });
  // @ts-expect-error the document has no such argument
  await memory.search("x", { colour: "red" });
  // @ts-expect-error a memory type is user, feedback, project or reference
  await memory.write("x", { name: "n", type: "opinion" });
  // @ts-expect-error undo takes consolidation or dream
  await memory.undo("everything");
  // @ts-expect-error a message needs a role
  await memory.appendMessages("chat", { content: "no role" });

  try {
    await memory.forget("nothing");
  } catch (e) {
    if (e instanceof MnemoError) {
      const code: ErrorCode = e.code;
      const status: number = e.status;
      void [code, status];
    }
  }
  void [citation, source, text, count, merged, what, total];
}
