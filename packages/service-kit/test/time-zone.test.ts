import { describe, expect, it } from 'vitest';
import { isTimeZone } from '../src/time-zone.ts';

const judged = (zones: string[]) => zones.map((zone) => [zone, isTimeZone(zone)]);

describe('isTimeZone', () => {
  it('knows IANA zone names, UTC included', () => {
    const zones = ['UTC', 'Europe/Berlin', 'America/Argentina/Buenos_Aires', 'Asia/Kolkata'];
    expect(judged(zones)).toEqual(zones.map((zone) => [zone, true]));
  });

  it('refuses the empty name, unknown names, offsets written as names and anything past 64 characters', () => {
    const zones = ['', 'Mars/Olympus_Mons', 'Europe/Berlin ', 'GMT+25', `Europe/${'x'.repeat(60)}`];
    expect(judged(zones)).toEqual(zones.map((zone) => [zone, false]));
  });
});
