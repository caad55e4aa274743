// OpenClaw memory plugin backed by mnemo. Selected with
// `plugins.slots.memory: "mnemo"`, it answers memory_search and memory_get
// and `openclaw memory` from mnemo, and records every agent turn into a mnemo
// session (`agent_end`), which mnemo then searches and consolidates.

import { registerMemoryCli } from "./cli.js";
import { Connection, readConfig } from "./config.js";
import { lastTurn } from "./messages.js";
import type { PluginApi, PluginEntry } from "./openclaw.js";
import { manager } from "./search.js";
import { getTool, promptSection, searchTool } from "./tools.js";

/** Turns of these triggers are the host's own bookkeeping, not conversation. */
const NOT_CONVERSATION = new Set(["heartbeat", "cron"]);

const plugin: PluginEntry = {
  id: "mnemo",
  name: "mnemo memory",
  description: "Memory from mnemo: memory_search / memory_get with mnemo's citations, every turn recorded into mnemo",
  kind: "memory",
  register(api: PluginApi) {
    const config = readConfig(api.pluginConfig);
    const conn = new Connection(config);

    api.registerMemoryCapability({
      deterministicRecallToolName: "memory_search",
      promptBuilder: (params) => promptSection(params),
      runtime: {
        async getMemorySearchManager() {
          try {
            return { manager: await manager(conn) };
          } catch (e) {
            return { manager: null, error: e instanceof Error ? e.message : String(e) };
          }
        },
        resolveMemoryBackendConfig: () => ({ backend: "builtin" }),
        // One mnemo workspace belongs to one owner: its hits are the requester's to see.
        authorizeSearchHits: async ({ hits }) => hits,
        // The agent workspace's MEMORY.md and USER.md are the operator's files,
        // loaded into the prompt as OpenClaw does without a memory runtime.
        supportsWorkspaceMemoryReadSources: true,
        classifyWorkspaceMemoryPaths: async ({ relativePaths }) =>
          relativePaths.map((relativePath) => ({ relativePath, originClass: "owner" as const })),
        closeAllMemorySearchManagers: async () => {},
      },
    });

    api.registerTool(() => searchTool(conn), { names: ["memory_search"] });
    api.registerTool(() => getTool(conn), { names: ["memory_get"] });

    api.registerCli(({ program }) => registerMemoryCli(program, conn), {
      descriptors: [{ name: "memory", description: "Search and inspect memory (mnemo)", hasSubcommands: true }],
    });

    if (config.recordTurns) {
      api.on("agent_end", async (event, ctx) => {
        if (ctx.trigger && NOT_CONVERSATION.has(ctx.trigger)) return;
        const session = ctx.sessionKey ?? ctx.sessionId;
        if (!session) return;
        const messages = lastTurn(event.messages ?? []);
        if (messages.length === 0) return;
        try {
          const memory = await conn.memory();
          await memory.appendMessages(`${config.sessionPrefix}${session}`, messages);
        } catch (e) {
          api.logger.warn(`mnemo: the turn was not recorded: ${e instanceof Error ? e.message : String(e)}`);
        }
      });
    }

    api.on("gateway_stop", () => conn.close());
  },
};

export default plugin;
