/**
 * What of a client's request body may reach the provider account, which all accounts of the
 * gateway share (docs/clients-passthrough.md). Fields the gateway does not read pass through to a
 * provider of the same dialect (new fields and betas keep working), except:
 *
 * - provider-side state, which one account could create and another reach on the shared provider
 *   account: stored responses and conversations, stored prompts, code-execution containers, cached
 *   contents. Storing is turned off; a reference to stored state is refused (400), as the gateway
 *   cannot tell which account made it;
 * - per-end-user identifiers and metadata, which the provider would file under the gateway's
 *   account whatever tenant sent them: dropped;
 * - keys that are no field of any protocol and mean something to JavaScript (`__proto__`,
 *   `constructor`, `prototype`) at the top level: dropped (a provider refuses the body for them).
 *
 * Applied to every body sent upstream, translated or not (a chat ↔ responses translation copies
 * some of these fields).
 */
import { TranslateError } from './errors.ts';
import type { Dialect } from './ir.ts';

type Json = Record<string, unknown>;

type Rule =
  | { field: string; action: 'drop'; why: string }
  | { field: string; action: 'off'; why: string }
  | { field: string; action: 'refuse'; message: string };

const STATE_REFUSED = 'the gateway keeps nothing at the provider, whose account all its clients share';

const END_USER: Rule[] = [
  { field: 'metadata', action: 'drop', why: 'stored with a response or completion at the provider' },
  { field: 'user', action: 'drop', why: 'an end-user id filed under the shared provider account' },
  { field: 'safety_identifier', action: 'drop', why: 'an end-user id filed under the shared provider account' },
];

/** The rules of each dialect, as documented in docs/clients-passthrough.md. */
export const PASSTHROUGH_POLICY: Record<Dialect, readonly Rule[]> = {
  chat: [{ field: 'store', action: 'off', why: 'stores the completion at the provider (off by default there)' }, ...END_USER],
  responses: [
    { field: 'store', action: 'off', why: 'stores the response at the provider (on by default there)' },
    { field: 'background', action: 'drop', why: 'needs a stored response, polled at the provider' },
    {
      field: 'previous_response_id',
      action: 'refuse',
      message: `previous_response_id is not supported: ${STATE_REFUSED}. Send the whole conversation in input (as with store: false), with reasoning items' encrypted_content where needed.`,
    },
    { field: 'conversation', action: 'refuse', message: `conversation is not supported: ${STATE_REFUSED}. Send the whole conversation in input.` },
    { field: 'prompt', action: 'refuse', message: `prompt (a stored prompt template) is not supported: ${STATE_REFUSED}. Send the instructions in instructions or input.` },
    ...END_USER,
  ],
  messages: [
    { field: 'metadata', action: 'drop', why: 'metadata.user_id, an end-user id filed under the shared provider account' },
    { field: 'container', action: 'refuse', message: `container is not supported: ${STATE_REFUSED}. Leave it out.` },
  ],
  gemini: [{ field: 'cachedContent', action: 'refuse', message: `cachedContent is not supported: ${STATE_REFUSED}. Send the content in the request.` }],
};

/** Keys that are no field of any protocol and that JavaScript gives a meaning. */
export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'] as const;

/**
 * `body` (a copy the caller owns) as it may be sent to a provider speaking `dialect`: see the
 * module comment. Throws a `TranslateError` (400 `invalid_request`) for a reference to
 * provider-side state, naming what to send instead.
 */
export function applyPassthroughPolicy(dialect: Dialect, body: Json): Json {
  for (const key of PROTOTYPE_KEYS) if (Object.hasOwn(body, key)) delete body[key];
  for (const rule of PASSTHROUGH_POLICY[dialect]) {
    if (!Object.hasOwn(body, rule.field) || body[rule.field] === undefined) continue;
    if (rule.action === 'refuse') throw new TranslateError(rule.message);
    delete body[rule.field];
    if (rule.action === 'off') body[rule.field] = false;
  }
  // The provider stores responses unless told not to.
  if (dialect === 'responses') body.store = false;
  return body;
}
