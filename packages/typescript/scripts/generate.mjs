// npm run generate [-- --url URL | --offline]
//
// Refreshes openapi.json from the document mnemo serves (a `mnemo serve`
// started from MNEMO_BIN or PATH on a scratch workspace, or the running
// server at --url), then regenerates src/schema.ts from it with
// openapi-typescript. --offline regenerates src/schema.ts from the
// checked-in openapi.json only.

import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { documentPath, documentText, fetchDocument, render, schemaPath } from "./openapi.mjs";

const { values } = parseArgs({
  options: { url: { type: "string" }, offline: { type: "boolean", default: false } },
});

let doc;
if (values.offline) {
  doc = JSON.parse(readFileSync(documentPath, "utf8"));
} else {
  doc = await fetchDocument({ url: values.url });
  writeFileSync(documentPath, documentText(doc));
  console.log(`wrote ${documentPath} (mnemo ${doc.info?.version})`);
}
writeFileSync(schemaPath, await render(doc));
console.log(`wrote ${schemaPath}`);
