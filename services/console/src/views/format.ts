/**
 * How numbers and times read on every page: credits are integers (1 credit = 1 VND) with
 * thousands separators, times are shown in the viewer's zone (the account's unless the member
 * chose another) with the zone named in the page footer.
 */

const INTEGER = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** `1234567` → `1,234,567`; exact for any bigint. */
export function formatInteger(value: bigint | number | string): string {
  return INTEGER.format(typeof value === 'string' ? BigInt(value) : value);
}

/** A signed amount: `+1,000` / `−250` (a real minus sign, read as "minus" by screen readers). */
export function formatSigned(value: bigint): string {
  if (value > 0n) return `+${formatInteger(value)}`;
  if (value < 0n) return `\u2212${formatInteger(-value)}`;
  return '0';
}

const timeFormats = new Map<string, Intl.DateTimeFormat>();

function timeFormat(timeZone: string): Intl.DateTimeFormat {
  let f = timeFormats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone,
      year: 'numeric',
      month: 'short',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    timeFormats.set(timeZone, f);
  }
  return f;
}

/** `12 Mar 2025, 14:05` in the zone. */
export function formatTime(unixMs: bigint | number, timeZone: string): string {
  return timeFormat(timeZone).format(new Date(Number(unixMs)));
}

/** ISO 8601 instant for `<time datetime>`. */
export function isoTime(unixMs: bigint | number): string {
  return new Date(Number(unixMs)).toISOString();
}
