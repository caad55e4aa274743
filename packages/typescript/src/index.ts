export { Memory, type MemoryOptions } from "./client.js";
export type { StartOptions } from "./local.js";
export {
  BusyError,
  ConfigError,
  ConnectionError,
  ForbiddenError,
  InvalidInputError,
  MnemoError,
  NotFoundError,
  ProviderError,
  StartError,
  UnauthorizedError,
  type ErrorCode,
} from "./errors.js";
export type * from "./types.js";
export type { components, operations, paths } from "./schema.js";
