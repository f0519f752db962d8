import { describe, expect, it } from 'vitest';
import { hash } from '@node-rs/argon2';
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

  const INVISIBLE_ONLY = 'The password cannot be only spaces or invisible characters. Use words or other characters you can see.';

  it.each([
    ['password1234', /^This password is too easy to guess\. This is similar to a commonly used password\. Use a longer passphrase/],
    ['qwertyuiop12', /^This password is too easy to guess\./],
    ['aaaaaaaaaaaaaaaa', /^This password is too easy to guess\. Repeated characters/],
    ['memberpassword', /^This password is too easy to guess\./], // the address's own name counts as known
    [' '.repeat(12), new RegExp(`^${INVISIBLE_ONLY.replace(/\./g, '\\.')}$`)],
    ['\u200B'.repeat(12), new RegExp(`^${INVISIBLE_ONLY.replace(/\./g, '\\.')}$`)],
    ['\u3000\u2800\u200D\u3164'.repeat(3), new RegExp(`^${INVISIBLE_ONLY.replace(/\./g, '\\.')}$`)],
  ])('refuses %j with a reason and what to do', (password, problem) => {
    expect(passwordProblem(password, 'member@example.com')).toMatch(problem);
  });

  it('counts characters as code points after NFKC: four emoji are four characters, not eight', () => {
    expect(passwordProblem('🐙🦀🐝🦜🐳🦔🐌🐢', 'a@b.co')).toBe('Use at least 12 characters.');
    expect(passwordProblem('🐙🦀🐝🦜🐳🦔🐌🐢🦩🦥🐡🦂', 'a@b.co')).toBeNull();
  });

  it('normalises Unicode: a composed and a decomposed é, full-width letters, are the same password', async () => {
    const stored = await hashPassword('café crème brûlée à la carte');
    expect(await verifyPassword(stored, 'cafe\u0301 cre\u0300me bru\u0302le\u0301e a\u0300 la carte')).toBe(true);
    const wide = await hashPassword('ｆｕｌｌ ｗｉｄｔｈ ｐａｓｓｐｈｒａｓｅ');
    expect(await verifyPassword(wide, 'full width passphrase')).toBe(true);
  });

  it('a hash made before normalisation still matches the password as it was typed', async () => {
    const typed = 'ｆｕｌｌ ｗｉｄｔｈ ｏｌｄ ｏｎｅ';
    const legacy = await hash(typed, { algorithm: 2 as never, memoryCost: 19_456, timeCost: 2, parallelism: 1 });
    expect(await verifyPassword(legacy, typed)).toBe(true);
    expect(await verifyPassword(legacy, 'something else entirely')).toBe(false);
  });
});
