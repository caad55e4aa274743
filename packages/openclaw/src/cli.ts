// `openclaw memory` while mnemo holds the memory slot (memory-core, which
// owns the command otherwise, is not loaded then): status, search, index.

import { MnemoError } from "mnemo-memory";
import type { Connection } from "./config.js";
import { describe } from "./config.js";
import type { Command } from "./openclaw.js";
import { providerStatus, search } from "./search.js";

function positiveInt(flag: string) {
  return (value: string) => {
    const n = Number(value.trim());
    if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a positive integer.`);
    return n;
  };
}

function number(flag: string) {
  return (value: string) => {
    const n = Number(value.trim());
    if (value.trim() === "" || !Number.isFinite(n)) throw new Error(`${flag} must be a finite number.`);
    return n;
  };
}

/** Runs a command body; a failure is one line on stderr (and JSON on stdout with --json), exit code 1. */
async function run(json: boolean | undefined, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (e) {
    const code = e instanceof MnemoError ? e.code : "internal";
    const message = e instanceof Error ? e.message : String(e);
    if (json) process.stdout.write(JSON.stringify({ ok: false, error: { type: "mnemo", code, message } }) + "\n");
    process.stderr.write(`mnemo: ${message}\n`);
    process.exitCode = 1;
  }
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
}

export function registerMemoryCli(program: Command, conn: Connection): void {
  const memory = program.command("memory").description("Search and inspect memory (mnemo)");

  memory
    .command("search")
    .description("Search memory and past conversations (mnemo)")
    .argument("[query]", "Search query")
    .option("--query <text>", "Search query (alternative to the positional argument)")
    .option("--agent <id>", "Agent id (mnemo keeps one memory for every agent)")
    .option("--max-results <n>", "Max results", positiveInt("--max-results"))
    .option("--min-score <n>", "Minimum score (0 to 1)", number("--min-score"))
    .option("--json", "Print JSON")
    .action(async (queryArg: string | undefined, opts: { query?: string; maxResults?: number; minScore?: number; json?: boolean }) => {
      await run(opts.json, async () => {
        const query = (opts.query ?? queryArg ?? "").trim();
        if (!query) throw new Error("Missing search query. Provide a positional query or use --query <text>.");
        const m = await conn.memory();
        const { results, answer } = await search(m, query, {
          maxResults: opts.maxResults ?? conn.config.maxResults,
          minScore: opts.minScore,
        });
        if (opts.json) {
          process.stdout.write(
            JSON.stringify({ results, provider: "mnemo", mode: answer.mode, warnings: answer.warnings }, null, 2) + "\n",
          );
          return;
        }
        if (results.length === 0) {
          process.stdout.write("No matches.\n");
          return;
        }
        const blocks = results.map((r) => {
          const head = `${r.score.toFixed(3)} ${r.citation}${r.validity ? `  (${r.validity})` : ""}`;
          return `${head}\n${indent(r.snippet.trimEnd())}`;
        });
        process.stdout.write(blocks.join("\n\n") + "\n");
      });
    });

  memory
    .command("status")
    .description("Show mnemo's server and index")
    .option("--agent <id>", "Agent id (mnemo keeps one memory for every agent)")
    .option("--json", "Print JSON")
    .action(async (opts: { json?: boolean }) => {
      await run(opts.json, async () => {
        const status = await providerStatus(conn);
        if (opts.json) {
          process.stdout.write(JSON.stringify(status, null, 2) + "\n");
          return;
        }
        const mnemo = (status.custom?.mnemo ?? {}) as Record<string, unknown>;
        const lines = [
          `Memory: mnemo ${mnemo.version ?? ""} at ${mnemo.url}`.trimEnd(),
          `Workspace: ${status.workspaceDir ?? describe(conn.config)}`,
          `Search: ${mnemo.mode}${status.model ? ` (${status.model})` : ""}`,
          `Index: ${status.files ?? 0} files, ${status.chunks ?? 0} chunks${status.dirty ? " (updated on the next search)" : ""}`,
          `Turns recorded: ${conn.config.recordTurns ? `yes, as mnemo sessions ${conn.config.sessionPrefix}<session key>` : "no"}`,
        ];
        process.stdout.write(lines.join("\n") + "\n");
      });
    });

  memory
    .command("index")
    .description("Bring mnemo's index up to date (it also catches up before every search)")
    .option("--agent <id>", "Agent id (mnemo keeps one memory for every agent)")
    .option("--force", "Accepted for compatibility: mnemo's index is incremental")
    .option("--verbose", "Verbose output")
    .action(async (opts: { verbose?: boolean }) => {
      await run(false, async () => {
        const m = await conn.memory();
        // mnemo indexes what changed before answering a search.
        await m.search("index", { max_results: 1 });
        const status = await providerStatus(conn);
        process.stdout.write(
          `Memory index updated (mnemo): ${status.files ?? 0} files, ${status.chunks ?? 0} chunks indexed.\n` +
            (opts.verbose ? `Workspace: ${status.workspaceDir}\nServer: ${m.url}\n` : ""),
        );
      });
    });
}
