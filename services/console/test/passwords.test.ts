import { describe, expect, it } from 'vitest';
import { hashPassword, PASSWORD_MAX, passwordProblem, verifyPassword } from '../src/auth/passwords.ts';

describe('password hashing (argon2id)', () => {
  it('stores an argon2id PHC string with OWASP parameters and a random salt', async () => {
    const a = await hashPassword('correct horse battery staple');
    const b = await hashPassword('correct horse battery staple');
    expect(a).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('correct horse');
  });

  it('verifies the right password and refuses a wrong one', async () => {
    const stored = await hashPassword('correct horse battery staple');
    expect(await verifyPassword(stored, 'correct horse battery staple')).toBe(true);
    expect(await verifyPassword(stored, 'correct horse battery stapl')).toBe(false);
    expect(await verifyPassword(stored, '')).toBe(false);
  });

  it('answers false (after real work) when there is no hash, and refuses oversize input at once', async () => {
    const started = performance.now();
    expect(await verifyPassword(null, 'whatever password')).toBe(false);
    // The dummy verification costs about as much as a real one (a few ms at least).
    expect(performance.now() - started).toBeGreaterThan(2);
    expect(await verifyPassword(await hashPassword('x'.repeat(20)), 'x'.repeat(PASSWORD_MAX + 1))).toBe(false);
  });

  it('refuses garbage stored hashes without throwing', async () => {
    expect(await verifyPassword('not-a-hash', 'whatever password')).toBe(false);
  });

  it.each([
    ['short', 'a@b.co', 'Use at least 12 characters.'],
    ['x'.repeat(PASSWORD_MAX + 1), 'a@b.co', `Use at most ${PASSWORD_MAX} characters.`],
    ['Member@Example.com', 'member@example.com', 'The password cannot be your e-mail address.'],
    ['a fine long passphrase', 'a@b.co', null],
  ])('policy: %s', (password, email, problem) => {
    expect(passwordProblem(password, email)).toBe(problem);
  });
});
