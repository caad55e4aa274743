// OpenClaw's agent messages (as `agent_end` hands them over in 2026.9.6)
// become mnemo's messages, the turn's and no others.

import assert from "node:assert/strict";
import { test } from "node:test";
import { lastTurn, toMnemo } from "../dist/messages.js";

// Two turns as OpenClaw 2026.9.6's embedded runner keeps them (shapes taken
// from a real `openclaw agent --local` run's agent_end event).
const earlier = [
  { role: "user", content: [{ type: "text", text: "Hi, I am Ada." }], timestamp: 1796583000000 },
  { role: "assistant", content: [{ type: "text", text: "Hello Ada." }], stopReason: "stop", timestamp: 1796583001000 },
];
const turn = [
  { role: "user", content: [{ type: "text", text: "What do I drink? Check your notes." }], timestamp: 1796583014250 },
  {
    role: "assistant",
    content: [
      { type: "thinking", thinking: "look it up" },
      { type: "toolCall", id: "ms1", name: "memory_search", arguments: { query: "drink" } },
    ],
    api: "openai-completions",
    provider: "scripted",
    model: "scripted-model",
    stopReason: "toolUse",
    timestamp: 1796583014352,
  },
  {
    role: "toolResult",
    toolCallId: "ms1",
    toolName: "memory_search",
    content: [{ type: "text", text: '{"results":[]}' }],
    details: {},
    isError: false,
    timestamp: 1796583014531,
  },
  { role: "assistant", content: [{ type: "text", text: "You drink green tea." }], stopReason: "stop", timestamp: 1796583014548 },
];

test("the last turn is taken from its user message on, in mnemo's shape", () => {
  assert.deepEqual(lastTurn([...earlier, ...turn]), [
    { role: "user", content: "What do I drink? Check your notes.", timestamp: "2026-12-06T18:50:14.250Z" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "ms1", type: "function", function: { name: "memory_search", arguments: '{"query":"drink"}' } }],
      timestamp: "2026-12-06T18:50:14.352Z",
    },
    {
      role: "tool",
      content: '{"results":[]}',
      tool_call_id: "ms1",
      name: "memory_search",
      timestamp: "2026-12-06T18:50:14.531Z",
    },
    { role: "assistant", content: "You drink green tea.", timestamp: "2026-12-06T18:50:14.548Z" },
  ]);
});

test("a failed tool result says so, and images are named", () => {
  assert.equal(
    toMnemo({ role: "toolResult", toolCallId: "x", toolName: "exec", content: [{ type: "text", text: "boom" }], isError: true })
      .content,
    "error: boom",
  );
  assert.deepEqual(toMnemo({ role: "user", content: [{ type: "text", text: "look" }, { type: "image", data: "…" }] }), {
    role: "user",
    content: "look\n[image]",
  });
  assert.equal(toMnemo({ role: "user", content: "plain text" }).content, "plain text");
});

test("what is not conversation is left out", () => {
  assert.equal(toMnemo({ role: "assistant", content: [{ type: "thinking", thinking: "hm" }] }), undefined);
  assert.equal(toMnemo({ role: "custom", content: "x" }), undefined);
  assert.equal(toMnemo(null), undefined);
  assert.deepEqual(lastTurn([{ role: "assistant", content: [{ type: "text", text: "no prompt" }] }]), []);
  assert.deepEqual(lastTurn([]), []);
});
