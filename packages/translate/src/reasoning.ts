/**
 * A provider's reasoning proof carried through a client of another dialect and back.
 *
 * Providers sign their model's reasoning (Anthropic thinking blocks' `signature`, Gemini's
 * `thoughtSignature`) and want it back with the next turn. A client of another dialect keeps it in
 * its own protocol's opaque field (a messages thinking block's `signature`, a responses reasoning
 * item's `encrypted_content`), as an envelope: base64url of the JSON `{"p":provider,"s":value}`
 * (`p` is `anthropic` or `google`), plus, for Anthropic, the thinking text (`t`) the signature
 * covers, or `r: true` for redacted thinking (`s` then holds its `data`).
 *
 * The gateway signs and checks nothing: the envelope only says which provider's value it holds, and
 * the value goes back only to a provider of that dialect, as the provider's own value. A client can
 * put anything in it, exactly as it could send any signature to that provider directly; the
 * provider checks it. A value that is not an envelope is the client's provider's own (its dialect).
 */
import type { Dialect, ReasoningPart } from './ir.ts';
import { isRecord } from './json.ts';

/** Dialects whose providers sign reasoning, by the provider name an envelope uses. */
const PROVIDERS = { anthropic: 'messages', google: 'gemini' } as const satisfies Record<string, Dialect>;
type Provider = keyof typeof PROVIDERS;

function providerOf(dialect: Dialect): Provider | undefined {
  return (Object.keys(PROVIDERS) as Provider[]).find((p) => PROVIDERS[p] === dialect);
}

/** The envelope for a reasoning part of another dialect's provider; undefined when it has no signature to carry. */
export function sealReasoning(part: ReasoningPart): string | undefined {
  const provider = part.source === undefined ? undefined : providerOf(part.source);
  if (provider === undefined || part.signature === undefined || part.signature === '') return undefined;
  // Anthropic checks a signature against the thinking it signed: its text travels with it.
  const body = part.redacted ? { p: provider, s: part.signature, r: true } : part.source === 'messages' ? { p: provider, s: part.signature, t: part.text } : { p: provider, s: part.signature };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

/** An envelope's reasoning part (its text from the envelope, else `text`); undefined when `value` is not one. */
export function openReasoning(value: string, text: string): ReasoningPart | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(value)) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isRecord(body) || typeof body.s !== 'string' || typeof body.p !== 'string' || !Object.hasOwn(PROVIDERS, body.p)) return undefined;
  const source = PROVIDERS[body.p as Provider];
  if (body.r === true) return { type: 'reasoning', text: '', signature: body.s, source, redacted: true };
  return { type: 'reasoning', text: typeof body.t === 'string' ? body.t : text, signature: body.s, source };
}
