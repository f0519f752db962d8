import { randomBytes, randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type {
  AuthenticationResponseJSON,
  AuthenticatorTransport,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { Hmac } from './secrets.ts';

/**
 * The WebAuthn library, loaded on the first ceremony: with its certificate and ASN.1 parsers it is
 * about 300 modules, which a console nobody registers a passkey with would hold for nothing.
 */
const webauthn = () => import('@simplewebauthn/server');

/**
 * Passkeys (WebAuthn) as a second sign-in factor. The relying party is the console's configured
 * public URL (`CONSOLE_PUBLIC_URL`): its origin is the only one a response may come from and its
 * host is the RP ID, never the request's Host. Every ceremony answers a one-time challenge kept
 * server-side for `CHALLENGE_TTL_MS` under an HMAC of a random handle (the browser holds the
 * handle); it is spent on first use, right or wrong. A credential's signature counter must grow
 * (a cloned authenticator or a replayed assertion is refused), and only credentials registered
 * to the member signing in are accepted. Adding or removing one leaves the member a security notice.
 */
export const CHALLENGE_TTL_MS = 5 * 60_000;
const RP_NAME = 'Gateway console';
const NAME_MAX = 60;

export type ChallengePurpose = 'register' | 'authenticate';

export interface PasskeyListing {
  id: string;
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** Why a ceremony was refused (the member is told the message). */
export class PasskeyError extends Error {
  readonly reason: 'challenge' | 'credential' | 'verification';
  /** What the verification found (for the log, not the page). */
  readonly detail: string;

  constructor(reason: PasskeyError['reason'], message: string, detail = message) {
    super(message);
    this.reason = reason;
    this.detail = detail;
  }
}

interface PasskeyRow {
  id: string;
  credential_id: string;
  public_key: Buffer;
  counter: string | number;
  transports: string;
}

export class Passkeys {
  readonly #orm: MikroORM;
  readonly #hmac: Hmac;
  readonly #now: () => Date;
  readonly origin: string;
  readonly rpId: string;

  /** `publicUrl`: the console's public URL (its origin and host make the relying party). */
  constructor(orm: MikroORM, hmac: Hmac, publicUrl: string, now: () => Date = () => new Date()) {
    const url = new URL(publicUrl);
    this.#orm = orm;
    this.#hmac = hmac;
    this.#now = now;
    this.origin = url.origin;
    this.rpId = url.hostname;
  }

  /** Stores a challenge for `memberId`; answers the handle the browser sends back with the response. */
  async issueChallenge(memberId: string, purpose: ChallengePurpose, challenge: string): Promise<string> {
    const handle = randomBytes(32).toString('base64url');
    const em = this.#orm.em.fork();
    await em.execute('delete from passkey_challenge where expires_at < ?', [this.#now()]);
    await em.execute('insert into passkey_challenge (handle_hash, member_id, purpose, challenge, expires_at) values (?, ?, ?, ?, ?)', [
      this.#hmac.digest('passkey-challenge', handle),
      memberId,
      purpose,
      challenge,
      new Date(this.#now().getTime() + CHALLENGE_TTL_MS),
    ]);
    return handle;
  }

  /** Spends the challenge behind `handle`: its value when it is the member's, for this purpose, and not expired. */
  async takeChallenge(memberId: string, purpose: ChallengePurpose, handle: string): Promise<string | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(handle)) return null;
    const rows = await this.#orm.em
      .fork()
      .execute<{ member_id: string; purpose: string; challenge: string; expires_at: Date }[]>(
        'delete from passkey_challenge where handle_hash = ? returning member_id, purpose, challenge, expires_at',
        [this.#hmac.digest('passkey-challenge', handle)],
      );
    const row = rows[0];
    if (!row || row.member_id !== memberId || row.purpose !== purpose) return null;
    return new Date(row.expires_at).getTime() >= this.#now().getTime() ? row.challenge : null;
  }

  async #rows(memberId: string): Promise<PasskeyRow[]> {
    return this.#orm.em
      .fork()
      .execute<PasskeyRow[]>('select id, credential_id, public_key, counter, transports from member_passkey where member_id = ? order by created_at', [memberId]);
  }

  async has(memberId: string): Promise<boolean> {
    const rows = await this.#orm.em.fork().execute<{ n: string }[]>('select count(*) as n from member_passkey where member_id = ?', [memberId]);
    return Number(rows[0]?.n ?? 0) > 0;
  }

  async list(memberId: string): Promise<PasskeyListing[]> {
    const rows = await this.#orm.em
      .fork()
      .execute<{ id: string; name: string; created_at: Date; last_used_at: Date | null }[]>(
        'select id, name, created_at, last_used_at from member_passkey where member_id = ? order by created_at',
        [memberId],
      );
    return rows.map((r) => ({ id: r.id, name: r.name, createdAt: new Date(r.created_at), lastUsedAt: r.last_used_at ? new Date(r.last_used_at) : null }));
  }

  /** Removes one of the member's passkeys; false when there is no such passkey of theirs. */
  async remove(memberId: string, passkeyId: string): Promise<boolean> {
    if (!/^[0-9a-f-]{36}$/i.test(passkeyId)) return false;
    return this.#orm.em.fork().transactional(async (tx) => {
      const rows = await tx.execute<{ id: string }[]>('delete from member_passkey where id = ? and member_id = ? returning id', [passkeyId, memberId]);
      if (rows.length === 0) return false;
      await tx.execute('insert into member_notice (member_id, kind, created_at) values (?, ?, ?)', [memberId, 'passkey-removed', this.#now()]);
      return true;
    });
  }

  /** Options for `navigator.credentials.create()` and the challenge's handle. */
  async registrationOptions(member: { id: string; email: string }): Promise<{ options: PublicKeyCredentialCreationOptionsJSON; handle: string }> {
    const existing = await this.#rows(member.id);
    const { generateRegistrationOptions } = await webauthn();
    const options = await generateRegistrationOptions({
      rpName: RP_NAME,
      rpID: this.rpId,
      userName: member.email,
      userID: new TextEncoder().encode(member.id),
      attestationType: 'none',
      excludeCredentials: existing.map((r) => ({ id: r.credential_id, transports: transportsOf(r) })),
      authenticatorSelection: { residentKey: 'preferred', userVerification: 'required' },
    });
    return { options, handle: await this.issueChallenge(member.id, 'register', options.challenge) };
  }

  /** Verifies a registration and stores the credential; throws `PasskeyError` when refused. */
  async register(memberId: string, handle: string, response: RegistrationResponseJSON, rawName: string): Promise<PasskeyListing> {
    const challenge = await this.takeChallenge(memberId, 'register', handle);
    if (!challenge) throw new PasskeyError('challenge', 'The passkey request expired. Start again.');
    const { verifyRegistrationResponse } = await webauthn();
    let verified;
    try {
      verified = await verifyRegistrationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: this.origin,
        expectedRPID: this.rpId,
        requireUserVerification: true,
      });
    } catch (err) {
      throw new PasskeyError('verification', 'The passkey could not be verified. Try again.', (err as Error).message);
    }
    if (!verified.verified) throw new PasskeyError('verification', 'The passkey could not be verified.');
    const { credential } = verified.registrationInfo;
    const name = rawName.normalize('NFC').replace(/\p{Cc}/gu, '').trim().slice(0, NAME_MAX) || 'Passkey';
    const id = randomUUID();
    const now = this.#now();
    try {
      await this.#orm.em.fork().transactional(async (tx) => {
        await tx.execute(
          'insert into member_passkey (id, member_id, credential_id, public_key, counter, transports, name, created_at) values (?, ?, ?, ?, ?, ?, ?, ?)',
          [id, memberId, credential.id, Buffer.from(credential.publicKey), credential.counter, (credential.transports ?? []).join(','), name, now],
        );
        await tx.execute('insert into member_notice (member_id, kind, created_at) values (?, ?, ?)', [memberId, 'passkey-added', now]);
      });
    } catch (err) {
      if ((err as { code?: string }).code === '23505' || /unique|duplicate/i.test((err as Error).message)) {
        throw new PasskeyError('credential', 'This passkey is registered already.');
      }
      throw err;
    }
    return { id, name, createdAt: now, lastUsedAt: null };
  }

  /** Options for `navigator.credentials.get()` naming the member's passkeys, and the challenge's handle. */
  async authenticationOptions(memberId: string): Promise<{ options: PublicKeyCredentialRequestOptionsJSON; handle: string }> {
    const rows = await this.#rows(memberId);
    const { generateAuthenticationOptions } = await webauthn();
    const options = await generateAuthenticationOptions({
      rpID: this.rpId,
      allowCredentials: rows.map((r) => ({ id: r.credential_id, transports: transportsOf(r) })),
      userVerification: 'required',
    });
    return { options, handle: await this.issueChallenge(memberId, 'authenticate', options.challenge) };
  }

  /** Verifies a sign-in assertion by one of the member's passkeys and moves its counter; throws `PasskeyError` when refused. */
  async authenticate(memberId: string, handle: string, response: AuthenticationResponseJSON): Promise<void> {
    const challenge = await this.takeChallenge(memberId, 'authenticate', handle);
    if (!challenge) throw new PasskeyError('challenge', 'The passkey request expired. Try again.');
    const row = (await this.#rows(memberId)).find((r) => typeof response?.id === 'string' && r.credential_id === response.id);
    if (!row) throw new PasskeyError('credential', 'That passkey is not registered to this member.');
    const { verifyAuthenticationResponse } = await webauthn();
    let verified;
    try {
      verified = await verifyAuthenticationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: this.origin,
        expectedRPID: this.rpId,
        credential: { id: row.credential_id, publicKey: new Uint8Array(row.public_key), counter: Number(row.counter), transports: transportsOf(row) },
        requireUserVerification: true,
      });
    } catch (err) {
      throw new PasskeyError('verification', 'The passkey could not be verified. Try again.', (err as Error).message);
    }
    if (!verified.verified) throw new PasskeyError('verification', 'The passkey could not be verified.');
    // Guarded by the counter read: two assertions racing cannot both move it forward from one value.
    const moved = await this.#orm.em
      .fork()
      .execute<{ id: string }[]>('update member_passkey set counter = ?, last_used_at = ? where id = ? and counter = ? returning id', [
        verified.authenticationInfo.newCounter,
        this.#now(),
        row.id,
        row.counter,
      ]);
    if (moved.length === 0) throw new PasskeyError('verification', 'The passkey was used at the same time elsewhere. Try again.');
  }
}

function transportsOf(row: PasskeyRow): AuthenticatorTransport[] {
  return row.transports ? (row.transports.split(',') as AuthenticatorTransport[]) : [];
}
