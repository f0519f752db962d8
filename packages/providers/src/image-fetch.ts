import { malformed } from './errors.ts';
import { HttpClient } from './transport.ts';
import type { ImageBytes } from './types.ts';

export interface ImageFetchOptions {
  maxBytes: number;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Names this downloader in errors; it carries no credentials, so it has no provider of its own. */
const DOWNLOADER = 'provider-image-host';
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

let client: HttpClient | undefined;

function imageClient(): HttpClient {
  client ??= new HttpClient({ provider: DOWNLOADER, connectMs: 5_000 });
  return client;
}

/**
 * True when `url` is on one of `allowedHosts` (`host`, `host:port`, or `*.domain` for subdomains)
 * over https; plain http only for loopback (local simulators).
 */
export function isAllowedImageUrl(url: URL, allowedHosts: readonly string[]): boolean {
  const hostname = url.hostname.toLowerCase();
  const host = url.host.toLowerCase();
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(hostname))) return false;
  return allowedHosts.some((pattern) => {
    const allowed = pattern.toLowerCase();
    if (allowed.startsWith('*.')) return hostname.endsWith(allowed.slice(1));
    return allowed === host || allowed === hostname;
  });
}

/**
 * Downloads an image a provider answered with as a URL, so it can be inlined as base64: only from
 * the provider's own hosts, at most `maxBytes`, within `timeoutMs`, and only if it is an image.
 * Redirects are not followed (they could lead anywhere).
 */
export async function fetchProviderImage(
  url: string,
  allowedHosts: readonly string[],
  opts: ImageFetchOptions,
): Promise<ImageBytes> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw malformed(DOWNLOADER, 'the image URL is not a URL');
  }
  if (!isAllowedImageUrl(target, allowedHosts)) throw malformed(DOWNLOADER, 'the image URL is not on a provider host');
  const { bytes, contentType } = await imageClient().bytes(
    {
      method: 'GET',
      url: target.toString(),
      headers: { accept: 'image/*' },
      timeoutMs: opts.timeoutMs,
      options: opts.signal === undefined ? {} : { signal: opts.signal },
    },
    opts.maxBytes,
  );
  const mimeType = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (!mimeType.startsWith('image/')) throw malformed(DOWNLOADER, 'the image URL did not answer with an image');
  // A plain view of the same memory: callers get a Uint8Array, not a Buffer, without a copy.
  return { bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), mimeType };
}
