/**
 * Wire shapes made fit for inline snapshots: server-sent events read back from the body, and the
 * values that change from run to run (ids, clocks, balances) replaced by what they stand for, so
 * that a snapshot shows every field and every event a client receives and nothing that varies.
 */

/** One server-sent event as sent: its `event:` name when it has one, its `data:` parsed when JSON. */
export interface WireEvent {
  event?: string;
  data: unknown;
}

/** The events of a `text/event-stream` body, in order. */
export function sseEvents(body: string): WireEvent[] {
  return body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
      const data = lines
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      let parsed: unknown = data;
      try {
        parsed = JSON.parse(data);
      } catch {
        // `[DONE]` and other plain text stay as sent.
      }
      return event === undefined ? { data: parsed } : { event, data: parsed };
    });
}

/**
 * The order of a stream's events by name (the `event:` line, else the data's `type`, else what a
 * chat chunk carries), a run of the same name folded into `name+`: a stream's grammar, which does
 * not change with the length of the generated text.
 */
export function eventSequence(events: WireEvent[]): string[] {
  const names = events.map(({ event, data }) => {
    if (event) return event;
    if (data === '[DONE]') return '[DONE]';
    const d = data as { type?: string; error?: unknown; choices?: Array<{ delta?: Record<string, unknown>; finish_reason?: string | null }> };
    if (d.type) return d.type;
    if (d.error) return 'error';
    const choice = d.choices?.[0];
    if (!choice) return 'chunk (no choices)';
    if (choice.finish_reason) return `chunk (finish_reason ${choice.finish_reason})`;
    return `chunk (${Object.keys(choice.delta ?? {}).sort().join(', ')})`;
  });
  return foldRuns(names);
}

/** Names in order, a run of the same name folded into `name+`. */
export function foldRuns(names: string[]): string[] {
  const folded: string[] = [];
  for (const name of names) {
    const last = folded.at(-1);
    if (last === name || last === `${name}+`) folded[folded.length - 1] = `${name}+`;
    else folded.push(name);
  }
  return folded;
}

/** Fields whose values differ on every run, by name, and what a snapshot shows in their place. */
const VOLATILE: Record<string, string> = {
  id: '<id>',
  created: '<unix seconds>',
  created_at: '<unix seconds>',
  balance_after: '<balance>',
  request_id: '<request id>',
  job_id: '<job id>',
};

/**
 * A deep copy with the volatile fields replaced (the keys of {@link VOLATILE} and any in `extra`),
 * where they hold a string or a number: a field that is null or an object stays (and is walked),
 * so the snapshot still shows it.
 */
export function stable<T>(value: T, extra: Record<string, string> = {}): T {
  const names = { ...VOLATILE, ...extra };
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(Object.entries(v).map(([k, inner]) => [k, k in names && (typeof inner === 'string' || typeof inner === 'number') ? names[k] : walk(inner)]));
  };
  return walk(value) as T;
}

/**
 * An error answer on one line, for tables of them in a snapshot: the status, the headers SDKs act
 * on (`null` when absent) and the body exactly as sent.
 */
export function errorLine(status: number, headers: Headers, body: unknown): string {
  return `${status} retry-after=${headers.get('retry-after')} x-should-retry=${headers.get('x-should-retry')} ${typeof body === 'string' ? body : JSON.stringify(body)}`;
}
