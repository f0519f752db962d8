/** A response body as undici hands it over: chunks, and a way to drop the rest. */
export interface ResponseBody extends AsyncIterable<Uint8Array> {
  destroy(error?: Error): unknown;
  once(event: 'error', listener: (err: Error) => void): unknown;
}

const ignore = (): void => undefined;

/**
 * Drops the rest of a body and its connection. undici reports destroying an unfinished body as an
 * error event; here that is the intent, so it is swallowed instead of crashing the process.
 */
export function discard(body: ResponseBody): void {
  body.once('error', ignore);
  body.destroy();
}

/** Largest error body we read: enough for any provider's error JSON, never a runaway stream. */
export const ERROR_BODY_LIMIT = 64 * 1024;

/** Largest JSON answer we accept (several base64 images fit comfortably). */
export const JSON_BODY_LIMIT = 128 * 1024 * 1024;

export interface BoundedRead {
  bytes: Buffer;
  /** True when the body was longer than the limit and the rest was dropped. */
  truncated: boolean;
}

/** Reads at most `limit` bytes, then drops the rest so an endless body cannot exhaust memory. */
export async function readBounded(body: ResponseBody, limit: number): Promise<BoundedRead> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const room = limit - size;
    if (chunk.byteLength > room) {
      chunks.push(Buffer.from(chunk.subarray(0, room)));
      discard(body);
      return { bytes: Buffer.concat(chunks), truncated: true };
    }
    chunks.push(Buffer.from(chunk));
    size += chunk.byteLength;
  }
  return { bytes: Buffer.concat(chunks), truncated: false };
}

/** The (bounded) text of an error answer; read failures just shorten it, the status says enough. */
export async function readErrorText(body: ResponseBody): Promise<string> {
  try {
    return (await readBounded(body, ERROR_BODY_LIMIT)).bytes.toString('utf8');
  } catch {
    discard(body);
    return '';
  }
}
