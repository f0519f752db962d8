import { withinCharacters } from '@gw/contracts';
import { GatewayError } from '@gw/errors';

/** Checks of what operators and the dashboard send: ids and names. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A syntactically valid id, or `not_found` (a malformed id cannot name anything). */
export function requireUuid(id: string, what: string): string {
  if (!UUID.test(id)) throw new GatewayError('not_found', `No such ${what}.`);
  return id;
}

/** Longest account or key name: a label shown in lists, not a document. */
export const NAME_MAX = 200;

/**
 * An account or key name as stored: trimmed, at most `NAME_MAX` characters, without control or
 * format characters (a newline or escape breaks a listing; a bidi override reverses what a page
 * shows after it). Names come from the operator CLI and the dashboard alike.
 */
export function checkedName(raw: string, what: 'account' | 'key', required: boolean): string {
  const name = raw.trim();
  if (required && name === '') throw new GatewayError('invalid_request', `An ${what} needs a name.`);
  if (!withinCharacters(name, NAME_MAX)) throw new GatewayError('invalid_request', `An ${what} name may have at most ${NAME_MAX} characters.`);
  if (/[\p{Cc}\p{Cf}]/u.test(name)) throw new GatewayError('invalid_request', `An ${what} name may not hold control or format characters.`);
  return name;
}
