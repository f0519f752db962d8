/**
 * Unique, cheap ids: a per-process stamp plus a counter. Content is deterministic; ids only have to be
 * unique (and sortable within one process), so no randomness is spent per request.
 */
const stamp = Date.now().toString(36);
let sequence = 0;

export function newId(prefix: string): string {
  sequence += 1;
  return `${prefix}${stamp}${sequence.toString(36).padStart(6, '0')}`;
}
