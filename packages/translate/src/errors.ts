/**
 * A request that cannot be expressed in the target dialect (e.g. a PDF block for a chat-only
 * provider, a server-side tool, a stateful `previous_response_id`). Callers answer it as a client
 * error (400 `invalid_request`) with this message: retrying cannot help.
 */
export class TranslateError extends Error {
  override name = 'TranslateError';
  /** Shown to the client as the error's `details` (what the client protocol's SDK reads). */
  readonly details: Record<string, unknown> | undefined;

  constructor(message: string, details?: Record<string, unknown>) {
    super(message);
    this.details = details;
  }
}
