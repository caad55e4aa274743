// Names for the types generated from mnemo's OpenAPI document (schema.ts):
// nothing here restates a field; every argument and answer is the
// document's own.

import type { components, operations } from "./schema.js";

type Schemas = components["schemas"];

/** Every operation of the HTTP API, by its operationId. */
export type OperationId = keyof operations;

type Json<T> = T extends { content: { "application/json": infer B } } ? B : never;

/** The answer of a successful `O` (200, or 201 for an append). */
export type Answer<O extends OperationId> = operations[O]["responses"] extends infer R
  ? R extends { 200: infer A }
    ? Json<A>
    : R extends { 201: infer A }
      ? Json<A>
      : never
  : never;

/** The JSON body `O` takes. */
export type Body<O extends OperationId> = operations[O] extends { requestBody?: infer B } ? Json<NonNullable<B>> : never;

/** The query parameters `O` takes. */
export type Query<O extends OperationId> = NonNullable<operations[O]["parameters"]["query"]>;

/** A message as sent and read back: the OpenAI chat shape (`role`, `content`, `tool_calls`, ...). */
export type Message = Schemas["MessageShape"];
export type AppendArgs = Schemas["AppendArgs"];
export type AppendOutput = Schemas["AppendOutput"];
export type HistoryOutput = Schemas["HistoryOutput"];
export type SessionsOutput = Schemas["SessionsOutput"];
export type SessionEntry = Schemas["SessionEntry"];
export type ContextArgs = Schemas["ContextArgs"];
export type ContextOutput = Schemas["ContextOutput"];
export type EventsOutput = Schemas["EventsOutput"];
export type CompactArgs = Schemas["CompactArgs"];
export type CloseOutput = Schemas["CloseOutput"];
export type TurnArgs = Schemas["TurnArgs"];
export type TurnOutput = Schemas["TurnOutput"];
export type MemoryWorkOutput = Schemas["MemoryWorkOutput"];
export type SearchArgs = Schemas["SearchArgs"];
export type SearchOutput = Schemas["SearchOutput"];
/** One search hit: `citation` is `path#Lx-Ly`, which `get` opens. */
export type Hit = Schemas["Hit"];
export type Validity = Schemas["Validity"];
export type GetOutput = Schemas["GetOutput"];
export type GetArgs = Query<"get_memory_get">;
export type WriteArgs = Schemas["WriteArgs"];
export type WriteOutput = Schemas["WriteOutput"];
export type ForgetOutput = Schemas["ForgetOutput"];
export type MemoryHistoryOutput = Schemas["MemoryHistoryOutput"];
export type UndoArgs = Schemas["UndoArgs"];
export type UndoOutput = Schemas["UndoOutput"];
/** What a dream did (`POST /v1/memory/dream`). */
export type DreamOutput = Schemas["DreamOutput"];
export type HealthOutput = Schemas["HealthOutput"];
/** The index's state (`status`: backend, model, files, chunks, vectors, dirty) and saved evaluations. */
export type IndexView = Schemas["IndexView"];
export type ErrorBody = Schemas["ErrorBody"];
