import type { MikroORM, QueryResult } from '@mikro-orm/postgresql';
import type { Role } from '../members/roles.ts';
import { randomToken, type Hmac } from './secrets.ts';

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
  accountId: string;
  email: string;
  timeZone: string | null;
}

export interface ResolvedSession {
  /** HMAC of the cookie value: the session's key, and what its CSRF token is derived from. */
  idHash: Buffer;
  member: SessionMember;
}

/** Activity is written at most this often, so browsing does not write on every request. */
const TOUCH_EVERY_MS = 60_000;

interface SessionRow {
  member_id: string;
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

  /** Starts a session; returns the value for the cookie (never stored). */
  async create(memberId: string): Promise<{ cookieValue: string; idHash: Buffer }> {
    const cookieValue = randomToken();
    const idHash = this.idHash(cookieValue);
    const now = this.#now();
    await this.#orm.em.fork().execute(
      'insert into session (id_hash, member_id, created_at, last_seen_at, expires_at) values (?, ?, ?, ?, ?)',
      [idHash, memberId, now, now, new Date(now.getTime() + this.#policy.maxMs)],
    );
    return { cookieValue, idHash };
  }

  /** The session of a cookie value, or null when unknown, idle too long or past its end. */
  async resolve(cookieValue: string): Promise<ResolvedSession | null> {
    if (cookieValue.length === 0 || cookieValue.length > 128) return null;
    const idHash = this.idHash(cookieValue);
    const em = this.#orm.em.fork();
    const rows = await em.execute<SessionRow[]>(
      `select s.member_id, s.last_seen_at, s.expires_at, m.account_id, m.email, m.time_zone, m.role
         from session s join member m on m.id = s.member_id where s.id_hash = ?`,
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
    return { idHash, member: { memberId: row.member_id, role: row.role, accountId: row.account_id, email: row.email, timeZone: row.time_zone } };
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
