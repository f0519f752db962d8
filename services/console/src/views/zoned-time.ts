import { TZDate } from '@date-fns/tz';

/**
 * Calendar arithmetic in an IANA time zone: today's date in a zone, and the instant of a
 * wall-clock time there (for `<input type="datetime-local">`, which has no zone). The zone's rules
 * come from @date-fns/tz (TZDate, on the runtime's Intl data); the rest is plain date text.
 */

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** `YYYY-MM-DD` of the instant in the zone. */
export function dateIn(instantMs: number, timeZone: string): string {
  const w = new TZDate(instantMs, timeZone);
  return `${pad(w.getFullYear(), 4)}-${pad(w.getMonth() + 1)}-${pad(w.getDate())}`;
}

/** `YYYY-MM-DDTHH:mm` of the instant in the zone (the value of a datetime-local input). */
export function localInputValue(instantMs: number, timeZone: string): string {
  const w = new TZDate(instantMs, timeZone);
  return `${pad(w.getFullYear(), 4)}-${pad(w.getMonth() + 1)}-${pad(w.getDate())}T${pad(w.getHours())}:${pad(w.getMinutes())}`;
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
 * one. A time skipped by a DST change resolves to the instant just after the gap (02:30 on a
 * spring-forward night is 03:30), in every zone; a time that happens twice is its first instant.
 */
export function instantOfLocal(value: string, timeZone: string): Date | null {
  const m = LOCAL.exec(value);
  if (!m || !isDate(value.slice(0, 10))) return null;
  const [h, mi] = [Number(m[4]), Number(m[5])];
  if (h > 23 || mi > 59) return null;
  return new Date(new TZDate(Number(m[1]), Number(m[2]) - 1, Number(m[3]), h, mi, timeZone).getTime());
}

/**
 * Zones for the display time zone picker: the runtime's canonical list (which spells some zones
 * the old way, e.g. Asia/Saigon) plus UTC and the account's own spelling.
 */
export function timeZoneChoices(accountZone: string): string[] {
  return [...new Set([accountZone, 'UTC', ...Intl.supportedValuesOf('timeZone')])].sort();
}
