/**
 * Calendar arithmetic in an IANA time zone with nothing but Intl: today's date in a zone, and the
 * instant of a wall-clock time there (for `<input type="datetime-local">`, which has no zone).
 */

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/;

const partsFormats = new Map<string, Intl.DateTimeFormat>();

function wallClock(instantMs: number, timeZone: string): { y: number; mo: number; d: number; h: number; mi: number; s: number } {
  let f = partsFormats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
    partsFormats.set(timeZone, f);
  }
  const parts: Record<string, number> = {};
  for (const p of f.formatToParts(new Date(instantMs))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return { y: parts.year!, mo: parts.month!, d: parts.day!, h: parts.hour!, mi: parts.minute!, s: parts.second! };
}

/** Milliseconds the zone's wall clock is ahead of UTC at an instant. */
function offsetMs(instantMs: number, timeZone: string): number {
  const w = wallClock(instantMs, timeZone);
  return Date.UTC(w.y, w.mo - 1, w.d, w.h, w.mi, w.s) - Math.floor(instantMs / 1000) * 1000;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** `YYYY-MM-DD` of the instant in the zone. */
export function dateIn(instantMs: number, timeZone: string): string {
  const w = wallClock(instantMs, timeZone);
  return `${pad(w.y, 4)}-${pad(w.mo)}-${pad(w.d)}`;
}

/** `YYYY-MM-DDTHH:mm` of the instant in the zone (the value of a datetime-local input). */
export function localInputValue(instantMs: number, timeZone: string): string {
  const w = wallClock(instantMs, timeZone);
  return `${pad(w.y, 4)}-${pad(w.mo)}-${pad(w.d)}T${pad(w.h)}:${pad(w.mi)}`;
}

/** True for a real calendar date `YYYY-MM-DD`. */
export function isDate(value: string): boolean {
  const m = DATE.exec(value);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

/** The date `days` after `YYYY-MM-DD` (negative for before). */
export function addDays(date: string, days: number): string {
  const m = DATE.exec(date);
  if (!m) throw new Error(`not a date: ${date}`);
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + days));
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

const utcMidnight = (date: string) => Date.UTC(Number(date.slice(0, 4)), Number(date.slice(5, 7)) - 1, Number(date.slice(8, 10)));

/** Whole days from `from` to `to` (both `YYYY-MM-DD`). */
export function daysBetween(from: string, to: string): number {
  return Math.round((utcMidnight(to) - utcMidnight(from)) / 86_400_000);
}

/**
 * The instant of a wall-clock time `YYYY-MM-DDTHH:mm` in the zone, or null when the text is not
 * one. A time skipped by a DST change resolves to the instant just after the gap.
 */
export function instantOfLocal(value: string, timeZone: string): Date | null {
  const m = LOCAL.exec(value);
  if (!m || !isDate(value.slice(0, 10))) return null;
  const [h, mi] = [Number(m[4]), Number(m[5])];
  if (h > 23 || mi > 59) return null;
  const asUtc = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), h, mi);
  // Two rounds settle the offset: the first guess may sit on the other side of a DST change.
  let instant = asUtc - offsetMs(asUtc, timeZone);
  instant = asUtc - offsetMs(instant, timeZone);
  return new Date(instant);
}

/**
 * Zones for the display time zone picker: the runtime's canonical list (which spells some zones
 * the old way, e.g. Asia/Saigon) plus UTC and the account's own spelling.
 */
export function timeZoneChoices(accountZone: string): string[] {
  return [...new Set([accountZone, 'UTC', ...Intl.supportedValuesOf('timeZone')])].sort();
}
