/** Faults the simulator can inject, from a prompt directive or a per-model setting. */
export type Fault =
  | { kind: 'status'; status: number }
  | { kind: 'timeout' }
  | { kind: 'no_usage' }
  | { kind: 'stream_error' }
  | { kind: 'malformed' }
  | { kind: 'video_failed' }
  | { kind: 'video_safety' }
  | { kind: 'video_lost' };

const NAMED: Readonly<Record<string, Fault>> = {
  timeout: { kind: 'timeout' },
  no_usage: { kind: 'no_usage' },
  stream_error: { kind: 'stream_error' },
  malformed: { kind: 'malformed' },
  video_failed: { kind: 'video_failed' },
  video_safety: { kind: 'video_safety' },
  video_lost: { kind: 'video_lost' },
};

/** `429`, `500`, `503`, `529`... (any 400-599 status) or one of the named faults; undefined otherwise. */
export function parseFault(name: string): Fault | undefined {
  const value = name.trim().toLowerCase();
  if (/^\d{3}$/.test(value)) {
    const status = Number(value);
    return status >= 400 && status <= 599 ? { kind: 'status', status } : undefined;
  }
  return Object.hasOwn(NAMED, value) ? NAMED[value] : undefined;
}

