/**
 * What a call to mnemo can fail with: the server's error codes (the same on
 * every surface of mnemo: `mnemo --help` lists them) and the client's own.
 */
export type ErrorCode =
  // The server's codes.
  | "invalid_input"
  | "forbidden"
  | "not_found"
  | "corrupt"
  | "busy"
  | "provider"
  | "config"
  | "io"
  | "internal"
  | "unauthorized"
  | "too_large"
  // The client's: the server could not be reached, could not be started,
  // or answered something that is not mnemo's JSON.
  | "unreachable"
  | "start_failed"
  | "bad_response"
  | "timeout";

/**
 * An error mnemo answered (or the client met on its way there): `code` is
 * mnemo's error code, `status` the HTTP status (0 when no answer came),
 * `message` what went wrong and what to do instead.
 */
export class MnemoError extends Error {
  /** mnemo's error code, e.g. `not_found`, or one of the client's (`unreachable`, `start_failed`). */
  readonly code: ErrorCode;
  /** The HTTP status of the answer; 0 when there was none. */
  readonly status: number;

  constructor(code: ErrorCode, message: string, status = 0) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }

  /** The error for mnemo's answer `{"error": {code, message}}` with `status`. */
  static fromBody(status: number, code: string, message: string): MnemoError {
    const Class = BY_CODE[code] ?? MnemoError;
    return new Class(code as ErrorCode, message, status);
  }
}

/** The arguments cannot be used (400 `invalid_input`, 413 `too_large`): the message says what to send. */
export class InvalidInputError extends MnemoError {}
/** No token was sent, or the wrong one (401 `unauthorized`). */
export class UnauthorizedError extends MnemoError {}
/** Refused: a path that would leave the workspace, or a token that does not open it (403 `forbidden`). */
export class ForbiddenError extends MnemoError {}
/** The named session, memory, file or endpoint does not exist (404 `not_found`). */
export class NotFoundError extends MnemoError {}
/** Another writer holds the resource; retrying later may succeed (409 `busy`). */
export class BusyError extends MnemoError {}
/**
 * Configuration is missing or wrong (`config`): among others, an operation
 * that needs a chat model on a server that has none (501).
 */
export class ConfigError extends MnemoError {}
/** The chat model or embedding provider failed (502 `provider`). */
export class ProviderError extends MnemoError {}
/** The server could not be reached, or answered something that is not mnemo's. */
export class ConnectionError extends MnemoError {}
/** `Memory.start` could not start `mnemo serve`: the message holds its stderr. */
export class StartError extends MnemoError {}

const BY_CODE: Record<string, new (code: ErrorCode, message: string, status: number) => MnemoError> = {
  invalid_input: InvalidInputError,
  too_large: InvalidInputError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  not_found: NotFoundError,
  busy: BusyError,
  config: ConfigError,
  provider: ProviderError,
  unreachable: ConnectionError,
  bad_response: ConnectionError,
  timeout: ConnectionError,
  start_failed: StartError,
};
