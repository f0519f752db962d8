import type { MikroORM, QueryResult } from '@mikro-orm/postgresql';
import type { Role } from '../members/roles.ts';
import { randomToken, type Hmac } from './secrets.ts';
import { clientNetwork } from './throttle.ts';

/**
 * Server-side sessions. The browser holds a random id; the table keeps its HMAC, so a copy of the
 * table signs nobody in. A session ends after `idleMs` without a request or `maxMs` after sign-in,
 * whichever comes first, and at once on logout, "log out everywhere" or a password change.
 */

export interface SessionPolicy {
  idleMs: number;
  maxMs: number;
}

/** The member a valid session belongs to. */
export interface SessionMember {
  memberId: string;
  /** Read at every request: a role changed by an owner applies at the member's next request. */
  role: Role;
  /** The account's owners require two-step sign-in and this member has not set it up yet. */
  totpMissing: boolean;
  accountId: string;
  email: string;
  timeZone: string | null;
}

export interface ResolvedSession {
  /** HMAC of the cookie value: the session's key, and what its CSRF token is derived from. */
  idHash: Buffer;
  /** When the member last proved who they are in this session (sign-in or re-authentication). */
  authenticatedAt: Date;
  member: SessionMember;
}

export interface SessionListing {
  handle: string;
  idHash: Buffer;
  createdAt: Date;
  lastSeenAt: Date;
  userAgent: string;
  network: string;
}

/** Activity is written at most this often, so browsing does not write on every request. */
const TOUCH_EVERY_MS = 60_000;

interface SessionRow {
  member_id: string;
  totp_missing: boolean;
  authenticated_at: Date;
  role: Role;
  account_id: string;
  email: string;
  time_zone: string | null;
  last_seen_at: Date;
  expires_at: Date;
}

export class Sessions {
  readonly #orm: MikroORM;
  readonly #hmac: Hmac;
  readonly #policy: SessionPolicy;
  readonly #now: () => Date;

  constructor(orm: MikroORM, hmac: Hmac, policy: SessionPolicy, now: () => Date = () => new Date()) {
    this.#orm = orm;
    this.#hmac = hmac;
    this.#policy = policy;
    this.#now = now;
  }

  idHash(cookieValue: string): Buffer {
    return this.#hmac.digest('session', cookieValue);
  }

  /**
   * Starts a session; returns the value for the cookie (never stored). The browser's name and the
   * client network are kept to show the member their sessions.
   */
  async create(memberId: string, device: { userAgent?: string | undefined; ip?: string | undefined } = {}): Promise<{ cookieValue: string; idHash: Buffer }> {
    const cookieValue = randomToken();
    const idHash = this.idHash(cookieValue);
    const now = this.#now();
    await this.#orm.em.fork().execute(
      'insert into session (id_hash, member_id, created_at, last_seen_at, authenticated_at, expires_at, user_agent, network) values (?, ?, ?, ?, ?, ?, ?, ?)',
      [idHash, memberId, now, now, now, new Date(now.getTime() + this.#policy.maxMs), device.userAgent?.replace(/\p{C}/gu, '').slice(0, 200) ?? null, device.ip ? clientNetwork(device.ip).slice(0, 64) : null],
    );
    return { cookieValue, idHash };
  }

  /** A name for a session in pages and forms: derived from its id hash, useless as a cookie. */
  handle(idHash: Buffer): string {
    return this.#hmac.digest('session-handle', idHash).toString('base64url').slice(0, 22);
  }

  /** The member's sessions still in use, newest activity first. */
  async list(memberId: string): Promise<SessionListing[]> {
    const now = this.#now();
    const rows = await this.#orm.em.fork().execute<{ id_hash: Buffer; created_at: Date; last_seen_at: Date; user_agent: string | null; network: string | null }[]>(
      `select id_hash, created_at, last_seen_at, user_agent, network from session
        where member_id = ? and expires_at > ? and last_seen_at > ? order by last_seen_at desc, created_at desc`,
      [memberId, now, new Date(now.getTime() - this.#policy.idleMs)],
    );
    return rows.map((r) => ({
      handle: this.handle(r.id_hash),
      idHash: r.id_hash,
      createdAt: new Date(r.created_at),
      lastSeenAt: new Date(r.last_seen_at),
      userAgent: r.user_agent ?? '',
      network: r.network ?? '',
    }));
  }

  /** Ends one of the member's sessions by its handle; false when they have none by that name. */
  async revokeByHandle(memberId: string, handle: string): Promise<boolean> {
    const found = (await this.list(memberId)).find((s) => s.handle === handle);
    if (!found) return false;
    await this.revoke(found.idHash);
    return true;
  }

  /** The session of a cookie value, or null when unknown, idle too long or past its end. */
  async resolve(cookieValue: string): Promise<ResolvedSession | null> {
    if (cookieValue.length === 0 || cookieValue.length > 128) return null;
    const idHash = this.idHash(cookieValue);
    const em = this.#orm.em.fork();
    const rows = await em.execute<SessionRow[]>(
      `select s.member_id, s.last_seen_at, s.expires_at, s.authenticated_at, m.account_id, m.email, m.time_zone, m.role,
              (m.totp_secret is null and coalesce(a.require_totp, false)
               and not exists (select 1 from member_passkey p where p.member_id = m.id)) as totp_missing
         from session s join member m on m.id = s.member_id
         left join account_security a on a.account_id = m.account_id
        where s.id_hash = ?`,
      [idHash],
    );
    const row = rows[0];
    if (!row) return null;
    const now = this.#now().getTime();
    const lastSeen = new Date(row.last_seen_at).getTime();
    if (now >= new Date(row.expires_at).getTime() || now - lastSeen >= this.#policy.idleMs) {
      await em.execute('delete from session where id_hash = ?', [idHash]);
      return null;
    }
    if (now - lastSeen >= TOUCH_EVERY_MS) {
      await em.execute('update session set last_seen_at = ? where id_hash = ?', [new Date(now), idHash]);
    }
    return { idHash, authenticatedAt: new Date(row.authenticated_at), member: { memberId: row.member_id, role: row.role, totpMissing: row.totp_missing, accountId: row.account_id, email: row.email, timeZone: row.time_zone } };
  }

  /** The member proved who they are again in this session. */
  async reauthenticated(idHash: Buffer): Promise<void> {
    await this.#orm.em.fork().execute('update session set authenticated_at = ? where id_hash = ?', [this.#now(), idHash]);
  }

  async revoke(idHash: Buffer): Promise<void> {
    await this.#orm.em.fork().execute('delete from session where id_hash = ?', [idHash]);
  }

  /** Ends every session of the member, except `keep` (the one asking, after a password change). */
  async revokeAll(memberId: string, keep?: Buffer): Promise<number> {
    const em = this.#orm.em.fork();
    const res = keep
      ? await em.execute<QueryResult>('delete from session where member_id = ? and id_hash <> ?', [memberId, keep], 'run')
      : await em.execute<QueryResult>('delete from session where member_id = ?', [memberId], 'run');
    return res.affectedRows;
  }

  /** Deletes sessions that can no longer be used (housekeeping). */
  async sweep(): Promise<number> {
    const now = this.#now();
    const res = await this.#orm.em.fork().execute<QueryResult>(
      'delete from session where expires_at <= ? or last_seen_at <= ?',
      [now, new Date(now.getTime() - this.#policy.idleMs)],
      'run',
    );
    return res.affectedRows;
  }
}
