// The types are generated from the document the binary serves, never
// written by hand: the checked-in openapi.json must be what `mnemo serve`
// answers at /openapi.json, and src/schema.ts what openapi-typescript makes
// of it. On a difference, `npm run generate` brings both up to date.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { documentPath, documentText, packageDir, render, schemaPath } from "../scripts/openapi.mjs";
import { skip, workspace } from "./helpers.mjs";

const REGENERATE = "run `npm run generate` (with MNEMO_BIN set to this mnemo) and commit openapi.json and src/schema.ts";

test("openapi.json is the document the binary serves", { skip }, async (t) => {
  const memory = await workspace(t).start();
  const root = memory.url.replace(/\/v1$/, "");
  const served = await (await fetch(`${root}/openapi.json`)).json();
  const checkedIn = readFileSync(documentPath, "utf8");
  assert.ok(
    documentText(served) === checkedIn,
    `openapi.json differs from what this mnemo serves: ${REGENERATE}`,
  );
});

test("src/schema.ts is generated from openapi.json", async () => {
  const doc = JSON.parse(readFileSync(documentPath, "utf8"));
  assert.ok(
    (await render(doc)) === readFileSync(schemaPath, "utf8"),
    `src/schema.ts is not what openapi-typescript makes of openapi.json: ${REGENERATE}`,
  );
});

test("every operation of the document has a method, typed by it", () => {
  const doc = JSON.parse(readFileSync(documentPath, "utf8"));
  const source = readFileSync(join(packageDir, "src", "client.ts"), "utf8");
  // The inspector's views serve its browser page (its index view excepted),
  // and the document itself is not a memory operation.
  const outside = /^get_(inspect_(memory|changes|sessions)|openapi_json)$/;
  const missing = [];
  for (const ops of Object.values(doc.paths)) {
    for (const op of Object.values(ops)) {
      if (outside.test(op.operationId) || op.operationId === "get_health") continue;
      if (!source.includes(`"${op.operationId}"`)) missing.push(op.operationId);
    }
  }
  assert.deepEqual(missing, [], "operations without a method in src/client.ts");
});

test("the client's types compile against the document (test/types.ts)", () => {
  const tsc = join(packageDir, "node_modules", "typescript", "bin", "tsc");
  try {
    execFileSync(process.execPath, [tsc, "-p", join(packageDir, "tsconfig.test.json")], { encoding: "utf8" });
  } catch (e) {
    assert.fail(`tsc -p tsconfig.test.json failed:\n${e.stdout}${e.stderr}`);
  }
});
