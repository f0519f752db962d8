import { randomBytes, randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHALLENGE_TTL_MS, PasskeyError, Passkeys } from '../src/auth/passkeys.ts';
import { SoftAuthenticator, b64u } from './soft-authenticator.ts';
import { FakeClock, insertMember, testHmac, testOrm } from './support.ts';

const PUBLIC_URL = 'https://console.test';

async function refusal(p: Promise<unknown>): Promise<PasskeyError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PasskeyError);
  return err as PasskeyError;
}

describe('passkeys: challenges, registration and sign-in assertions', () => {
  let orm: MikroORM;
  let passkeys: Passkeys;
  const clock = new FakeClock(Date.now());
  const account = randomUUID();

  beforeAll(async () => {
    orm = await testOrm();
    passkeys = new Passkeys(orm, testHmac(), `${PUBLIC_URL}/some/path`, clock.now);
  });
  afterAll(async () => {
    await orm?.close();
  });

  const newMember = async () => {
    const email = `pk-${randomUUID()}@example.com`;
    return { id: await insertMember(orm, account, email), email };
  };

  async function registered() {
    const member = await newMember();
    const auth = new SoftAuthenticator();
    const { options, handle } = await passkeys.registrationOptions(member);
    await passkeys.register(member.id, handle, auth.create(options.challenge), 'Laptop');
    return { member, auth };
  }

  it('takes the relying party from the public URL, not from any request', () => {
    expect(passkeys.origin).toBe(PUBLIC_URL);
    expect(passkeys.rpId).toBe('console.test');
  });

  it('a challenge is spent once, only by its member and purpose, and not after it expired', async () => {
    const a = await newMember();
    const b = await newMember();
    const h1 = await passkeys.issueChallenge(a.id, 'register', 'c1');
    expect(await passkeys.takeChallenge(a.id, 'register', h1)).toBe('c1');
    expect(await passkeys.takeChallenge(a.id, 'register', h1)).toBeNull();

    const h2 = await passkeys.issueChallenge(a.id, 'register', 'c2');
    expect(await passkeys.takeChallenge(b.id, 'register', h2)).toBeNull();
    // A wrong taker spends it too: it cannot be tried again.
    expect(await passkeys.takeChallenge(a.id, 'register', h2)).toBeNull();

    const h3 = await passkeys.issueChallenge(a.id, 'authenticate', 'c3');
    expect(await passkeys.takeChallenge(a.id, 'register', h3)).toBeNull();

    const h4 = await passkeys.issueChallenge(a.id, 'authenticate', 'c4');
    clock.advance(CHALLENGE_TTL_MS + 1);
    expect(await passkeys.takeChallenge(a.id, 'authenticate', h4)).toBeNull();
    expect(await passkeys.takeChallenge(a.id, 'authenticate', 'not a handle')).toBeNull();
  });

  it('registers a passkey from a real attestation, lists it, and signs in with it; the counter moves', async () => {
    const { member, auth } = await registered();
    const listed = await passkeys.list(member.id);
    expect(listed.map((p) => p.name)).toEqual(['Laptop']);
    expect(await passkeys.has(member.id)).toBe(true);

    const { options, handle } = await passkeys.authenticationOptions(member.id);
    expect(options.rpId).toBe('console.test');
    expect(options.allowCredentials?.map((c) => c.id)).toEqual([b64u(auth.credentialId)]);
    await passkeys.authenticate(member.id, handle, auth.get(options.challenge));
    expect((await passkeys.list(member.id))[0]?.lastUsedAt).not.toBeNull();

    // A second registration of the same authenticator is excluded and refused.
    const again = await passkeys.registrationOptions(member);
    expect(again.options.excludeCredentials?.map((c) => c.id)).toEqual([b64u(auth.credentialId)]);
    expect((await refusal(passkeys.register(member.id, again.handle, auth.create(again.options.challenge), 'Again'))).reason).toBe('credential');
  });

  it('refuses a registration answering another challenge, or made for another origin', async () => {
    const member = await newMember();
    const auth = new SoftAuthenticator();
    const first = await passkeys.registrationOptions(member);
    const err = await refusal(passkeys.register(member.id, first.handle, auth.create(first.options.challenge, { challenge: b64u(randomBytes(32)) }), 'x'));
    expect(err.reason).toBe('verification');
    expect(err.detail).toMatch(/challenge/);

    const elsewhere = new SoftAuthenticator('evil.test', 'https://evil.test');
    const second = await passkeys.registrationOptions(member);
    expect((await refusal(passkeys.register(member.id, second.handle, elsewhere.create(second.options.challenge), 'x'))).reason).toBe('verification');
    expect(await passkeys.list(member.id)).toEqual([]);
  });

  it('refuses an assertion for a wrong challenge, by an unknown or another member’s credential, and a replayed one', async () => {
    const { member, auth } = await registered();
    const other = await registered();

    const wrong = await passkeys.authenticationOptions(member.id);
    const wrongErr = await refusal(passkeys.authenticate(member.id, wrong.handle, auth.get(b64u(randomBytes(32)))));
    expect(wrongErr.reason).toBe('verification');
    expect(wrongErr.detail).toMatch(/challenge/);

    const unknown = await passkeys.authenticationOptions(member.id);
    expect((await refusal(passkeys.authenticate(member.id, unknown.handle, new SoftAuthenticator().get(unknown.options.challenge)))).reason).toBe('credential');

    const others = await passkeys.authenticationOptions(member.id);
    expect((await refusal(passkeys.authenticate(member.id, others.handle, other.auth.get(others.options.challenge)))).reason).toBe('credential');

    // The same signed assertion sent again: its challenge is spent.
    const ok = await passkeys.authenticationOptions(member.id);
    const assertion = auth.get(ok.options.challenge);
    await passkeys.authenticate(member.id, ok.handle, assertion);
    expect((await refusal(passkeys.authenticate(member.id, ok.handle, assertion))).reason).toBe('challenge');

    // A fresh challenge signed with a counter that did not move (a cloned authenticator): refused.
    const cloned = await passkeys.authenticationOptions(member.id);
    const clonedErr = await refusal(passkeys.authenticate(member.id, cloned.handle, auth.get(cloned.options.challenge, { keepCounter: true })));
    expect(clonedErr.reason).toBe('verification');
    expect(clonedErr.detail).toMatch(/counter/);
  });

  it('removes only the member’s own passkey', async () => {
    const { member } = await registered();
    const other = await newMember();
    const [pk] = await passkeys.list(member.id);
    expect(await passkeys.remove(other.id, pk!.id)).toBe(false);
    expect(await passkeys.remove(member.id, 'nonsense')).toBe(false);
    expect(await passkeys.remove(member.id, pk!.id)).toBe(true);
    expect(await passkeys.has(member.id)).toBe(false);
  });
});
