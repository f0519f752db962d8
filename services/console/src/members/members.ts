import { randomUUID } from 'node:crypto';
import type { EntityManager, MikroORM, QueryResult } from '@mikro-orm/postgresql';
import { hashPassword, passwordProblem, verifyPassword } from '../auth/passwords.ts';
import { randomToken, type Hmac } from '../auth/secrets.ts';
import { TotpCodes } from '../auth/totp.ts';
import type { Sessions } from '../auth/sessions.ts';
import { isUniqueViolation } from '../db/pg-errors.ts';
import type { Role } from './roles.ts';

/**
 * Members of accounts: created by an operator (the console's admin endpoint), who hands the person
 * a one-time set-password link; afterwards only the member knows the password.
 */

const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;
export const EMAIL_MAX = 254;

/** The stored form of an e-mail address (trimmed, lower-cased), or null when it is not one. */
export function normalizeEmail(raw: string): string | null {
  const email = raw.trim().toLowerCase();
  return email.length <= EMAIL_MAX && EMAIL.test(email) ? email : null;
}

export interface MemberRow {
  id: string;
  account_id: string;
  role: Role;
  email: string;
  password_hash: string | null;
  time_zone: string | null;
}

/** Why an operation on a member was refused, in words fit for the person or operator. */
export class MemberError extends Error {
  override name = 'MemberError';
  readonly reason: 'invalid' | 'exists' | 'token' | 'last-owner';

  constructor(reason: MemberError['reason'], message: string) {
    super(message);
    this.reason = reason;
  }
}

/** How long set-password links work: an invitation (no password yet) longer than a reset. */
export interface LinkLifetimes {
  inviteMs: number;
  resetMs: number;
}

/** What a member is told about their sign-in (`member_notice`; see `NOTICE_TEXT`). */
export type NoticeKind = 'password-changed' | 'password-set' | 'invite-link-issued' | 'reset-link-issued' | 'totp-enabled' | 'totp-disabled' | 'passkey-added' | 'passkey-removed';

export const NOTICE_TEXT: Record<NoticeKind, string> = {
  'password-changed': 'Your password was changed on the account page. Your other sessions ended.',
  'password-set': 'Your password was set from a one-time link. Every session ended.',
  'invite-link-issued': 'An invitation link to choose your password was issued.',
  'totp-enabled': 'Two-step sign-in was turned on: signing in now also asks for a code from your authenticator app.',
  'totp-disabled': 'Two-step sign-in was turned off.',
  'passkey-added': 'A passkey was added to your sign-in. If it was not you, remove it and change your password.',
  'passkey-removed': 'A passkey was removed from your sign-in.',
  'reset-link-issued': 'A password reset link was issued for your sign-in. If you did not ask for it, tell your account owner; your password keeps working until the link is used.',
};

/** How long a notice the member has read is kept. */
const NOTICE_KEEP_MS = 180 * 86_400_000;

/** A change to members or roles, as the console's audit trail keeps it. */
export interface ConsoleAuditEvent {
  actor: string;
  origin: string;
  /** `console.InviteMember`, `console.SetRole`, `console.RemoveMember`, `console.SetRequireTotp`, `console.EnableTotp`, `console.DisableTotp`, `console.AddPasskey`, `console.RemovePasskey`. */
  action: string;
  /** JSON. */
  details: string;
  at: Date;
}

export interface MemberListing {
  memberId: string;
  email: string;
  role: Role;
  /** False until the member has set a password from their invitation. */
  active: boolean;
  /** Two-step sign-in on. */
  totp: boolean;
  createdAt: Date;
}

export interface MemberNotice {
  kind: NoticeKind;
  text: string;
  createdAt: Date;
  seen: boolean;
}

/** A one-time set-password link's secret, what it is for and when it stops working. */
export interface IssuedLink {
  token: string;
  purpose: 'invite' | 'reset';
  expiresAt: Date;
}

export class Members {
  readonly #orm: MikroORM;
  readonly #hmac: Hmac;
  readonly #sessions: Sessions;
  readonly #links: LinkLifetimes;
  readonly #now: () => Date;
  readonly #totp: TotpCodes;

  constructor(orm: MikroORM, hmac: Hmac, sessions: Sessions, links: LinkLifetimes, now: () => Date = () => new Date()) {
    this.#orm = orm;
    this.#hmac = hmac;
    this.#totp = new TotpCodes(hmac);
    this.#sessions = sessions;
    this.#links = links;
    this.#now = now;
  }

  async byEmail(email: string): Promise<MemberRow | null> {
    const normal = normalizeEmail(email);
    if (!normal) return null;
    const rows = await this.#orm.em.fork().execute<MemberRow[]>(
      'select id, account_id, role, email, password_hash, time_zone from member where email = ?',
      [normal],
    );
    return rows[0] ?? null;
  }

  async byId(id: string): Promise<MemberRow | null> {
    const rows = await this.#orm.em.fork().execute<MemberRow[]>(
      'select id, account_id, role, email, password_hash, time_zone from member where id = ?',
      [id],
    );
    return rows[0] ?? null;
  }

  /**
   * Creates a member of an account (the caller checked the account exists). An address that
   * already belongs to a member who never set a password gets a fresh link instead (the first
   * may have expired); any other existing address is refused.
   */
  async create(accountId: string, rawEmail: string, role: Role = 'owner'): Promise<{ memberId: string; created: boolean }> {
    const email = normalizeEmail(rawEmail);
    if (!email) throw new MemberError('invalid', 'That is not an e-mail address.');
    const existing = await this.byEmail(email);
    if (existing) {
      if (existing.account_id === accountId && existing.password_hash === null) {
        // Through setRole: re-inviting the only owner with another role must not leave no owner.
        if (existing.role !== role) await this.setRole(existing.id, role);
        return { memberId: existing.id, created: false };
      }
      throw new MemberError('exists', 'A member with this e-mail address already exists.');
    }
    const id = randomUUID();
    try {
      await this.#orm.em.fork().execute('insert into member (id, account_id, email, role) values (?, ?, ?, ?)', [id, accountId, email, role]);
    } catch (err) {
      if (isUniqueViolation(err)) throw new MemberError('exists', 'A member with this e-mail address already exists.');
      throw err;
    }
    return { memberId: id, created: true };
  }

  /**
   * A new one-time set-password link; earlier unused links of the member stop working. For a
   * member who never set a password it is an invitation, else a reset (shorter lived). The
   * member is told (a notice) either way.
   */
  async issueSetPasswordToken(memberId: string): Promise<IssuedLink> {
    const token = randomToken();
    const now = this.#now();
    return this.#orm.em.fork().transactional(async (tx) => {
      const rows = await tx.execute<{ has_password: boolean }[]>('select password_hash is not null as has_password from member where id = ? for update', [memberId]);
      const purpose = rows[0]?.has_password ? 'reset' : 'invite';
      const expiresAt = new Date(now.getTime() + (purpose === 'reset' ? this.#links.resetMs : this.#links.inviteMs));
      await tx.execute('delete from password_token where member_id = ? and used_at is null', [memberId]);
      await tx.execute('insert into password_token (token_hash, member_id, created_at, expires_at, purpose) values (?, ?, ?, ?, ?)', [
        this.#hmac.digest('set-password', token),
        memberId,
        now,
        expiresAt,
        purpose,
      ]);
      await tx.execute('insert into member_notice (member_id, kind, created_at) values (?, ?, ?)', [memberId, `${purpose}-link-issued`, now]);
      return { token, purpose, expiresAt };
    });
  }

  /** How many notices the member has not seen yet. */
  async unseenNotices(memberId: string): Promise<number> {
    const rows = await this.#orm.em.fork().execute<{ n: string }[]>('select count(*)::text as n from member_notice where member_id = ? and seen_at is null', [memberId]);
    return Number(rows[0]?.n ?? 0);
  }

  /** The member's latest notices, newest first; reading them marks them seen. */
  async readNotices(memberId: string, limit = 20): Promise<MemberNotice[]> {
    const em = this.#orm.em.fork();
    const rows = await em.execute<{ kind: NoticeKind; created_at: Date; seen_at: Date | null }[]>(
      'select kind, created_at, seen_at from member_notice where member_id = ? order by created_at desc, id desc limit ?',
      [memberId, limit],
    );
    await em.execute('update member_notice set seen_at = ? where member_id = ? and seen_at is null', [this.#now(), memberId]);
    return rows.map((r) => ({ kind: r.kind, text: NOTICE_TEXT[r.kind] ?? r.kind, createdAt: new Date(r.created_at), seen: r.seen_at !== null }));
  }

  /** The member a set-password token is for, when the token is unused and unexpired. */
  async tokenMember(token: string): Promise<MemberRow | null> {
    if (token.length === 0 || token.length > 128) return null;
    const rows = await this.#orm.em.fork().execute<MemberRow[]>(
      `select m.id, m.account_id, m.role, m.email, m.password_hash, m.time_zone
         from password_token t join member m on m.id = t.member_id
        where t.token_hash = ? and t.used_at is null and t.expires_at > ?`,
      [this.#hmac.digest('set-password', token), this.#now()],
    );
    return rows[0] ?? null;
  }

  /**
   * Sets the password through a one-time token. The token is spent in the same transaction
   * (a second use finds it spent), and every session of the member ends.
   */
  async setPasswordWithToken(token: string, password: string): Promise<MemberRow> {
    const member = await this.tokenMember(token);
    if (!member) throw new MemberError('token', 'This link is invalid, used or expired. Ask your account owner or operator for a new one.');
    const problem = passwordProblem(password, member.email);
    if (problem) throw new MemberError('invalid', problem);
    const hash = await hashPassword(password);
    const now = this.#now();
    const spent = await this.#orm.em.fork().transactional(async (tx) => {
      const used = await tx.execute<{ member_id: string }[]>(
        'update password_token set used_at = ? where token_hash = ? and used_at is null and expires_at > ? returning member_id',
        [now, this.#hmac.digest('set-password', token), now],
      );
      if (used.length === 0) return false;
      await tx.execute('update member set password_hash = ?, password_changed_at = ? where id = ?', [hash, now, member.id]);
      await tx.execute('insert into member_notice (member_id, kind, created_at) values (?, ?, ?)', [member.id, 'password-set', now]);
      return true;
    });
    if (!spent) throw new MemberError('token', 'This link is invalid, used or expired. Ask your account owner or operator for a new one.');
    await this.#sessions.revokeAll(member.id);
    return member;
  }

  /** Changes the password after checking the current one; other sessions of the member end. */
  async changePassword(memberId: string, current: string, next: string, keepSession: Buffer): Promise<void> {
    const member = await this.byId(memberId);
    if (!member || !(await verifyPassword(member.password_hash, current))) {
      throw new MemberError('invalid', 'The current password is not correct.');
    }
    const problem = passwordProblem(next, member.email);
    if (problem) throw new MemberError('invalid', problem);
    const hash = await hashPassword(next);
    const now = this.#now();
    await this.#orm.em.fork().transactional(async (tx) => {
      await tx.execute('update member set password_hash = ?, password_changed_at = ? where id = ?', [hash, now, memberId]);
      await tx.execute('insert into member_notice (member_id, kind, created_at) values (?, ?, ?)', [memberId, 'password-changed', now]);
    });
    await this.#sessions.revokeAll(memberId, keepSession);
    await this.endPendingLinks(memberId);
  }

  /**
   * Ends the member's unused set-password links: a new password, or "log out everywhere", must
   * not leave a link behind that would set another (mail, chat and proxy logs keep them).
   */
  async endPendingLinks(memberId: string): Promise<void> {
    await this.#orm.em.fork().execute('delete from password_token where member_id = ? and used_at is null', [memberId]);
  }

  /** Sets a generated password directly (the local launcher's demo member); returns it once. */
  async setGeneratedPassword(memberId: string): Promise<string> {
    const password = randomToken().slice(0, 24);
    await this.#orm.em.fork().execute('update member set password_hash = ?, password_changed_at = ? where id = ?', [
      await hashPassword(password),
      this.#now(),
      memberId,
    ]);
    await this.endPendingLinks(memberId);
    return password;
  }

  /** The members of an account, owners first, then by address. */
  async list(accountId: string): Promise<MemberListing[]> {
    const rows = await this.#orm.em.fork().execute<{ id: string; email: string; role: Role; has_password: boolean; has_totp: boolean; created_at: Date }[]>(
      `select id, email, role, password_hash is not null as has_password,
              (totp_secret is not null or exists (select 1 from member_passkey p where p.member_id = member.id)) as has_totp, created_at from member where account_id = ?
        order by array_position(array['owner', 'admin', 'developer', 'viewer'], role), email`,
      [accountId],
    );
    return rows.map((r) => ({ memberId: r.id, email: r.email, role: r.role, active: r.has_password, totp: r.has_totp, createdAt: new Date(r.created_at) }));
  }

  /**
   * Gives a member another role. The account's owners are locked first, so two changes at once
   * cannot both take away the last owner.
   */
  async setRole(memberId: string, role: Role): Promise<MemberRow> {
    return this.#orm.em.fork().transactional(async (tx) => {
      const member = await this.#lockWithOwners(tx, memberId);
      if (member.role === 'owner' && role !== 'owner') await this.#keepAnOwner(tx, member);
      await tx.execute('update member set role = ? where id = ?', [role, memberId]);
      return { ...member, role };
    });
  }

  /** Removes a member (their sessions and links end with them); never the account's last owner. */
  async remove(memberId: string): Promise<MemberRow> {
    return this.#orm.em.fork().transactional(async (tx) => {
      const member = await this.#lockWithOwners(tx, memberId);
      if (member.role === 'owner') await this.#keepAnOwner(tx, member);
      await tx.execute('delete from member where id = ?', [memberId]);
      return member;
    });
  }

  async #lockWithOwners(tx: EntityManager, memberId: string): Promise<MemberRow> {
    const rows = await tx.execute<MemberRow[]>('select id, account_id, role, email, password_hash, time_zone from member where id = ?', [memberId]);
    const member = rows[0];
    if (!member) throw new MemberError('invalid', 'No such member.');
    await tx.execute(`select id from member where account_id = ? and role = 'owner' order by id for update`, [member.account_id]);
    return member;
  }

  async #keepAnOwner(tx: EntityManager, member: MemberRow): Promise<void> {
    const others = await tx.execute<{ n: string }[]>(`select count(*)::text as n from member where account_id = ? and role = 'owner' and id <> ?`, [member.account_id, member.id]);
    if (Number(others[0]?.n ?? 0) === 0) throw new MemberError('last-owner', 'An account always keeps one owner: make another member owner first.');
  }

  /**
   * Appends a change to members or roles to the console's audit trail (who: `member:<id>` or
   * `operator:<name>`; from where: the client's address). Recorded right after the change.
   */
  async recordAudit(event: { accountId: string; actor: string; origin: string; action: string; details: Record<string, unknown> }): Promise<void> {
    await this.#orm.em.fork().execute('insert into audit_event (account_id, actor, origin, action, details, created_at) values (?, ?, ?, ?, ?, ?)', [
      event.accountId,
      event.actor,
      event.origin,
      event.action,
      JSON.stringify(event.details),
      this.#now(),
    ]);
  }

  /** The console's audit trail of an account, newest first. */
  async auditEvents(accountId: string, limit: number): Promise<ConsoleAuditEvent[]> {
    const rows = await this.#orm.em.fork().execute<{ actor: string; origin: string; action: string; details: unknown; created_at: Date }[]>(
      'select actor, origin, action, details, created_at from audit_event where account_id = ? order by created_at desc, id desc limit ?',
      [accountId, limit],
    );
    return rows.map((r) => ({ actor: r.actor, origin: r.origin, action: r.action, details: typeof r.details === 'string' ? r.details : JSON.stringify(r.details), at: new Date(r.created_at) }));
  }

  /** Records who created a key in the console (a developer manages only their own keys). */
  async recordKeyCreator(keyId: string, accountId: string, memberId: string): Promise<void> {
    await this.#orm.em.fork().execute(
      'insert into key_creator (key_id, account_id, member_id, created_at) values (?, ?, ?, ?) on conflict (key_id) do nothing',
      [keyId, accountId, memberId, this.#now()],
    );
  }

  /** The member who created each key of the account in the console (keys made elsewhere have none). */
  async keyCreators(accountId: string): Promise<Map<string, string>> {
    const rows = await this.#orm.em.fork().execute<{ key_id: string; member_id: string }[]>('select key_id, member_id from key_creator where account_id = ?', [accountId]);
    return new Map(rows.map((r) => [r.key_id, r.member_id]));
  }

  /** The member who created a key in the console, or null. */
  async keyCreator(keyId: string): Promise<string | null> {
    const rows = await this.#orm.em.fork().execute<{ member_id: string }[]>('select member_id from key_creator where key_id = ?', [keyId]);
    return rows[0]?.member_id ?? null;
  }

  /** Whether the account's owners require two-step sign-in of every member. */
  async requiresTotp(accountId: string): Promise<boolean> {
    const rows = await this.#orm.em.fork().execute<{ require_totp: boolean }[]>('select require_totp from account_security where account_id = ?', [accountId]);
    return rows[0]?.require_totp ?? false;
  }

  async setRequireTotp(accountId: string, required: boolean): Promise<void> {
    await this.#orm.em.fork().execute(
      `insert into account_security (account_id, require_totp, updated_at) values (?, ?, ?)
       on conflict (account_id) do update set require_totp = excluded.require_totp, updated_at = excluded.updated_at`,
      [accountId, required, this.#now()],
    );
  }

  /** Whether the member has two-step sign-in (TOTP) on. */
  /** The member's second sign-in factors: TOTP on, passkeys registered. */
  async secondFactors(memberId: string): Promise<{ totp: boolean; passkey: boolean }> {
    const rows = await this.#orm.em
      .fork()
      .execute<{ totp: boolean; passkey: boolean }[]>(
        'select m.totp_secret is not null as totp, exists (select 1 from member_passkey p where p.member_id = m.id) as passkey from member m where m.id = ?',
        [memberId],
      );
    return { totp: rows[0]?.totp ?? false, passkey: rows[0]?.passkey ?? false };
  }

  async totpEnabled(memberId: string): Promise<boolean> {
    const rows = await this.#orm.em.fork().execute<{ on: boolean }[]>('select totp_secret is not null as on from member where id = ?', [memberId]);
    return rows[0]?.on ?? false;
  }

  /**
   * Starts setting up two-step sign-in: a new secret, kept sealed as pending until a code from it
   * confirms the member's app has it. Answers the secret and its `otpauth://` URI, to show once.
   */
  async startTotp(memberId: string, email: string): Promise<{ secret: string; uri: string }> {
    const secret = this.#totp.newSecret();
    await this.#orm.em.fork().execute('update member set totp_pending = ? where id = ?', [this.#totp.seal(secret), memberId]);
    return { secret, uri: this.#totp.uri(email, secret) };
  }

  /** Turns two-step sign-in on when `code` comes from the pending secret. */
  async confirmTotp(memberId: string, code: string): Promise<boolean> {
    const rows = await this.#orm.em.fork().execute<{ totp_pending: Buffer | null }[]>('select totp_pending from member where id = ?', [memberId]);
    const pending = rows[0]?.totp_pending;
    if (!pending) return false;
    const counter = this.#totp.check(this.#totp.open(pending), code, this.#now().getTime());
    if (counter === null) return false;
    const now = this.#now();
    await this.#orm.em.fork().transactional(async (tx) => {
      await tx.execute('update member set totp_secret = totp_pending, totp_pending = null, totp_last_counter = ? where id = ?', [counter, memberId]);
      await tx.execute('insert into member_notice (member_id, kind, created_at) values (?, ?, ?)', [memberId, 'totp-enabled', now]);
    });
    return true;
  }

  /** Checks a code of the member's two-step sign-in; a code is accepted once at most. */
  async verifyTotp(memberId: string, code: string): Promise<boolean> {
    const em = this.#orm.em.fork();
    const rows = await em.execute<{ totp_secret: Buffer | null }[]>('select totp_secret from member where id = ?', [memberId]);
    const sealed = rows[0]?.totp_secret;
    if (!sealed) return false;
    const counter = this.#totp.check(this.#totp.open(sealed), code, this.#now().getTime());
    if (counter === null) return false;
    const used = await em.execute<{ id: string }[]>(
      'update member set totp_last_counter = ? where id = ? and (totp_last_counter is null or totp_last_counter < ?) returning id',
      [counter, memberId, counter],
    );
    return used.length === 1;
  }

  async disableTotp(memberId: string): Promise<void> {
    await this.#orm.em.fork().transactional(async (tx) => {
      await tx.execute('update member set totp_secret = null, totp_pending = null, totp_last_counter = null where id = ?', [memberId]);
      await tx.execute('insert into member_notice (member_id, kind, created_at) values (?, ?, ?)', [memberId, 'totp-disabled', this.#now()]);
    });
  }

  /** Deletes notices read over 180 days ago (housekeeping); unread ones stay until read. */
  async sweepNotices(): Promise<number> {
    const res = await this.#orm.em
      .fork()
      .execute<QueryResult>('delete from member_notice where seen_at is not null and seen_at <= ?', [new Date(this.#now().getTime() - NOTICE_KEEP_MS)], 'run');
    return res.affectedRows;
  }

  /** Deletes spent and expired set-password tokens (housekeeping). */
  async sweepTokens(): Promise<number> {
    const res = await this.#orm.em
      .fork()
      .execute<QueryResult>('delete from password_token where used_at is not null or expires_at <= ?', [this.#now()], 'run');
    return res.affectedRows;
  }

  /** The member's display time zone; null returns to the account's. */
  async setTimeZone(memberId: string, timeZone: string | null): Promise<void> {
    await this.#orm.em.fork().execute('update member set time_zone = ? where id = ?', [timeZone, memberId]);
  }
}
