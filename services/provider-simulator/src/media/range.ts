/** A satisfiable single byte range, or why not. Multi-range requests are answered with their first range. */
export type RangeResult = { kind: 'full' } | { kind: 'partial'; start: number; end: number } | { kind: 'unsatisfiable' };

export function parseRange(header: string | undefined, size: number): RangeResult {
  if (header === undefined || header.trim() === '') return { kind: 'full' };
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*(?:,.*)?$/i.exec(header);
  if (!m) return { kind: 'full' }; // RFC 9110: an unparseable Range is ignored
  const [, startText = '', endText = ''] = m;
  if (startText === '' && endText === '') return { kind: 'full' };
  if (startText === '') {
    const suffix = Number(endText);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(startText);
  if (start >= size) return { kind: 'unsatisfiable' };
  const end = endText === '' ? size - 1 : Math.min(Number(endText), size - 1);
  if (end < start) return { kind: 'unsatisfiable' };
  return { kind: 'partial', start, end };
}
