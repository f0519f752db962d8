import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { lookup as dnsLookupAsync } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { createHmac } from 'node:crypto';
import { GatewayError } from '@gw/errors';
import ipaddr from 'ipaddr.js';

/** Where webhooks may go: public addresses over https; loopback too (any scheme) where allowed. */
export interface EndpointPolicy {
  allowLoopback: boolean;
}

export const URL_MAX = 2_048;

/**
 * Whether an address may receive webhooks: a public unicast address (no private, link-local,
 * shared, reserved, multicast or tunnel range, an IPv4-mapped IPv6 address judged as its IPv4),
 * or loopback where the policy allows it.
 */
export function addressAllowed(ip: string, policy: EndpointPolicy): boolean {
  if (!ipaddr.isValid(ip)) return false;
  let addr = ipaddr.parse(ip);
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) addr = (addr as ipaddr.IPv6).toIPv4Address();
  const range = addr.range();
  return range === 'unicast' || (policy.allowLoopback && range === 'loopback');
}

function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost') return true;
  return ipaddr.isValid(bare) && ipaddr.parse(bare).range() === 'loopback';
}

const refuse = (why: string) => new GatewayError('invalid_request', `The webhook URL ${why}.`);

/**
 * A webhook URL as stored, or `invalid_request` saying what to fix: absolute http(s) without
 * credentials, https unless it is a loopback address the policy allows, a host that resolves only
 * to allowed addresses. (Checked again at every delivery: DNS may answer otherwise later.)
 */
export async function checkedWebhookUrl(raw: string, policy: EndpointPolicy): Promise<string> {
  const text = raw.trim();
  if (text === '') throw refuse('is missing: give the https URL that receives the alerts');
  if (text.length > URL_MAX) throw refuse(`may have at most ${URL_MAX} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refuse('is not an absolute URL (https://host/path)');
  }
  if (url.username !== '' || url.password !== '') throw refuse('may not carry a user name or password');
  const loopback = isLoopbackHost(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback && policy.allowLoopback)) {
    throw refuse('must use https');
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await dnsLookupAsync(host, { all: true })).map((a) => a.address);
  } catch {
    throw refuse(`names a host that does not resolve (${host})`);
  }
  if (addresses.length === 0 || !addresses.every((a) => addressAllowed(a, policy))) {
    throw refuse(`names a host on an address that is not public (${host}); webhooks go to public https endpoints only`);
  }
  return url.toString();
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A DNS lookup that answers only allowed addresses: the connection goes where it was checked. */
function checkedLookup(policy: EndpointPolicy) {
  return (hostname: string, options: LookupAllOptions | object, callback: LookupCallback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, []);
      const refused = addresses.find((a) => !addressAllowed(a.address, policy));
      if (refused || addresses.length === 0) {
        return callback(Object.assign(new Error(`${hostname} resolves to an address that is not public (${refused?.address ?? 'none'})`), { code: 'EADDRNOTALLOWED' }), []);
      }
      if ((options as LookupAllOptions).all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** Standard Webhooks: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` with the secret's bytes. */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

export interface PostOptions {
  policy: EndpointPolicy;
  timeoutMs: number;
  /** Of the answer's body, read at most this many bytes (for the delivery log), then hang up. */
  maxResponseBytes: number;
}

/** What a POST came to: an HTTP status and the start of the answer, or why no answer came. */
export type PostOutcome = { status: number; body: string } | { error: string };

/**
 * POSTs a webhook: no redirects followed, every connection to a checked address, the whole
 * exchange bounded by `timeoutMs` and the answer by `maxResponseBytes`.
 */
export function postWebhook(rawUrl: string, headers: Record<string, string>, body: string, opts: PostOptions): Promise<PostOutcome> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      return resolve({ error: 'the URL is not valid' });
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && !addressAllowed(host, opts.policy)) return resolve({ error: `${host} is not a public address` });
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && opts.policy.allowLoopback && isLoopbackHost(host))) {
      return resolve({ error: 'the URL must use https' });
    }
    const send = url.protocol === 'https:' ? https.request : http.request;
    const req = send(
      url,
      {
        method: 'POST',
        agent: false,
        lookup: checkedLookup(opts.policy) as never,
        signal: AbortSignal.timeout(opts.timeoutMs),
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body).toString(), 'user-agent': 'gw-alerts/1', ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8').slice(0, opts.maxResponseBytes) });
        res.on('data', (chunk: Buffer) => {
          if (size < opts.maxResponseBytes) chunks.push(chunk.subarray(0, opts.maxResponseBytes - size));
          size += chunk.length;
          if (size >= opts.maxResponseBytes) {
            done();
            res.destroy();
          }
        });
        res.on('end', done);
        res.on('error', done);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      resolve({ error: err.name === 'TimeoutError' || err.name === 'AbortError' ? `no answer within ${opts.timeoutMs} ms` : err.message });
    });
    req.end(body);
  });
}
