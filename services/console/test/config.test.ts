import { describe, expect, it } from 'vitest';
import { consoleConfig } from '../src/config.ts';

const base = {
  DATABASE_URL: 'postgres://127.0.0.1/console',
  BILLING_ADDR: '127.0.0.1:50051',
  CATALOG_ADDR: '127.0.0.1:50052',
  SESSION_SECRET: 's'.repeat(32),
};

// Compose passes CONSOLE_ADMIN_TOKEN through as an empty value when the operator set none.
describe('CONSOLE_ADMIN_TOKEN', () => {
  it('unset or empty leaves the operator endpoint off', () => {
    expect(consoleConfig(base).CONSOLE_ADMIN_TOKEN).toBeUndefined();
    expect(consoleConfig({ ...base, CONSOLE_ADMIN_TOKEN: '' }).CONSOLE_ADMIN_TOKEN).toBeUndefined();
  });

  it('is taken when long enough, and a short one is refused with its name', () => {
    expect(consoleConfig({ ...base, CONSOLE_ADMIN_TOKEN: 't'.repeat(32) }).CONSOLE_ADMIN_TOKEN).toBe('t'.repeat(32));
    expect(() => consoleConfig({ ...base, CONSOLE_ADMIN_TOKEN: 'short' })).toThrow(/CONSOLE_ADMIN_TOKEN: must be at least 32 characters/);
  });
});

describe('CONSOLE_TRUST_PROXY', () => {
  it('names the proxies in front, or none; never everyone (true) or a hop count', () => {
    expect(consoleConfig(base).CONSOLE_TRUST_PROXY).toBe(false);
    expect(consoleConfig({ ...base, CONSOLE_TRUST_PROXY: 'false' }).CONSOLE_TRUST_PROXY).toBe(false);
    expect(consoleConfig({ ...base, CONSOLE_TRUST_PROXY: 'uniquelocal, 100.64.0.0/10' }).CONSOLE_TRUST_PROXY).toEqual(['uniquelocal', '100.64.0.0/10']);
    expect(() => consoleConfig({ ...base, CONSOLE_TRUST_PROXY: 'true' })).toThrow(/CONSOLE_TRUST_PROXY: give the addresses or CIDRs/);
    expect(() => consoleConfig({ ...base, CONSOLE_TRUST_PROXY: '1' })).toThrow(/CONSOLE_TRUST_PROXY/);
  });
});
