import { describe, expect, it } from 'vitest';
import { isTimeZone } from '../src/time-zone.ts';

describe('isTimeZone', () => {
  it('knows IANA zone names, UTC included', () => {
    for (const zone of ['UTC', 'Europe/Berlin', 'America/Argentina/Buenos_Aires', 'Asia/Kolkata']) expect(isTimeZone(zone), zone).toBe(true);
  });

  it('refuses the empty name, unknown names, offsets written as names and anything past 64 characters', () => {
    for (const zone of ['', 'Mars/Olympus_Mons', 'Europe/Berlin ', 'GMT+25', `Europe/${'x'.repeat(60)}`]) expect(isTimeZone(zone), zone).toBe(false);
  });
});
