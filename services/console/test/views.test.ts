import { describe, expect, it } from 'vitest';
import { tickStep } from '../src/views/bar-chart.ts';
import { formatInteger, formatSigned, formatTime } from '../src/views/format.ts';
import { html } from '../src/views/html.ts';
import { addDays, dateIn, instantOfLocal, isDate, localInputValue } from '../src/views/zoned-time.ts';

describe('html templates', () => {
  it('escape every interpolated value and keep nested templates', () => {
    const name = `<script>alert("x")</script>' \``;
    const out = html`<p title="${name}">${name}${html`<b>${'&'}</b>`}${[1, 2]}${null}${false}</p>`.value;
    expect(out).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; &#96;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; &#96;<b>&amp;</b>12</p>',
    );
  });
});

describe('formats', () => {
  it('credits are integers with thousands separators, exact beyond 2^53', () => {
    expect(formatInteger(1_000_000n)).toBe('1,000,000');
    expect(formatInteger('9007199254740993')).toBe('9,007,199,254,740,993');
    expect(formatSigned(-1_234n)).toBe('\u22121,234');
    expect(formatSigned(5n)).toBe('+5');
  });

  it('times are shown in the given zone (default Asia/Ho_Chi_Minh, UTC+7)', () => {
    const instant = Date.UTC(2025, 2, 1, 17, 30);
    expect(formatTime(instant, 'Asia/Ho_Chi_Minh')).toBe('02 Mar 2025, 00:30');
    expect(formatTime(instant, 'UTC')).toBe('01 Mar 2025, 17:30');
  });
});

describe('zoned calendar arithmetic', () => {
  it('today and wall-clock input values in a zone', () => {
    const instant = Date.UTC(2025, 2, 1, 17, 30);
    expect(dateIn(instant, 'Asia/Ho_Chi_Minh')).toBe('2025-03-02');
    expect(dateIn(instant, 'America/New_York')).toBe('2025-03-01');
    expect(localInputValue(instant, 'Asia/Ho_Chi_Minh')).toBe('2025-03-02T00:30');
  });

  it('wall-clock time to instant, across DST changes', () => {
    expect(instantOfLocal('2025-03-02T00:30', 'Asia/Ho_Chi_Minh')?.toISOString()).toBe('2025-03-01T17:30:00.000Z');
    expect(instantOfLocal('2025-07-01T12:00', 'Europe/Berlin')?.toISOString()).toBe('2025-07-01T10:00:00.000Z');
    expect(instantOfLocal('2025-01-01T12:00', 'Europe/Berlin')?.toISOString()).toBe('2025-01-01T11:00:00.000Z');
    // 02:30 does not exist on 2025-03-30 in Berlin: resolved just after the gap.
    expect(instantOfLocal('2025-03-30T02:30', 'Europe/Berlin')?.toISOString()).toBe('2025-03-30T01:30:00.000Z');
    // West of UTC too (the Intl-only arithmetic before @date-fns/tz gave 01:30 EST here, before the gap).
    expect(instantOfLocal('2026-03-08T02:30', 'America/New_York')?.toISOString()).toBe('2026-03-08T07:30:00.000Z');
    // 01:30 happens twice on 2026-11-01 in New York: the first one (EDT).
    expect(instantOfLocal('2026-11-01T01:30', 'America/New_York')?.toISOString()).toBe('2026-11-01T05:30:00.000Z');
    expect(instantOfLocal('2025-02-30T10:00', 'UTC')).toBeNull();
    expect(instantOfLocal('tomorrow', 'UTC')).toBeNull();
  });

  it('dates', () => {
    expect(isDate('2024-02-29')).toBe(true);
    expect(isDate('2025-02-29')).toBe(false);
    expect(addDays('2025-03-01', -1)).toBe('2025-02-28');
    expect(addDays('2024-12-31', 1)).toBe('2025-01-01');
  });
});

describe('chart ticks', () => {
  it.each([
    [0n, 1n],
    [3n, 1n],
    [10n, 5n],
    [95n, 50n],
    [1_234n, 500n],
    [1_000_000n, 500_000n],
  ])('max %d → step %d', (max, step) => {
    expect(tickStep(max)).toBe(step);
  });
});
