import ipaddr from 'ipaddr.js';
import type { MikroORM, QueryResult } from '@mikro-orm/postgresql';
import type { Hmac } from './secrets.ts';

/**
 * Login throttling, shared by every console replica through the database. Sign-in attempts are
 * counted per e-mail address (whether or not it has an account, so the answer reveals nothing)
 * and per client IP, in fixed windows, before the password is checked: attempts sent at once are
 * each counted before any is judged, so a burst gets no more checks than the limit. Reaching the
 * limit locks that e-mail or IP for the lockout period; a locked attempt is refused before any
 * password is checked. A success takes its own attempt back and clears the e-mail's count, not
 * the IP's earlier failures (else one valid account would reset an attacker's IP budget).
 */

export interface ThrottlePolicy {
  maxPerEmail: number;
  maxPerIp: number;
  windowMs: number;
  lockoutMs: number;
}

export interface ThrottleVerdict {
  locked: boolean;
  /** Whole seconds until the lock ends (0 when not locked). */
  retryAfterSeconds: number;
}

type Scope = 'email' | 'ip';

/** What a locked attempt is told: `Too many <what>. Try again in N minutes.` */
export function lockedMessage(verdict: ThrottleVerdict, what: string): string {
  const minutes = Math.ceil(verdict.retryAfterSeconds / 60);
  return `Too many ${what}. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
}

/**
 * What one client is, for the per-IP count: an IPv4 address, or an IPv6 address's /64. Any IPv6
 * connection comes with a whole /64 to choose addresses from, so counted per address the limit
 * would never be reached. An IPv4 address mapped into IPv6 is the IPv4 address.
 */
export function clientNetwork(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${address.toNormalizedString()}/64`).toString()}/64`;
}

export class LoginThrottle {
  readonly #orm: MikroORM;
  readonly #hmac: Hmac;
  readonly #policy: ThrottlePolicy;
  readonly #now: () => Date;

  constructor(orm: MikroORM, hmac: Hmac, policy: ThrottlePolicy, now: () => Date = () => new Date()) {
    this.#orm = orm;
    this.#hmac = hmac;
    this.#policy = policy;
    this.#now = now;
  }

  #subject(scope: Scope, value: string): Buffer {
    return this.#hmac.digest(`throttle-${scope}`, scope === 'email' ? value.trim().toLowerCase() : clientNetwork(value));
  }

  async check(email: string, ip: string): Promise<ThrottleVerdict> {
    const now = this.#now();
    const rows = await this.#orm.em.fork().execute<{ locked_until: Date }[]>(
      `select locked_until from login_throttle
        where ((scope = 'email' and subject = ?) or (scope = 'ip' and subject = ?)) and locked_until > ?
        order by locked_until desc limit 1`,
      [this.#subject('email', email), this.#subject('ip', ip), now],
    );
    const until = rows[0]?.locked_until;
    if (!until) return { locked: false, retryAfterSeconds: 0 };
    return { locked: true, retryAfterSeconds: Math.max(1, Math.ceil((new Date(until).getTime() - now.getTime()) / 1000)) };
  }

  /**
   * Whether a password may be checked now for this e-mail from this IP: refused while either is
   * locked; otherwise the attempt is counted first (as a failure until `recordSuccess`), and the
   * attempt past the limit is refused too, having just locked them.
   */
  async admit(email: string, ip: string): Promise<ThrottleVerdict> {
    const verdict = await this.check(email, ip);
    if (verdict.locked || (await this.countAttempt(email, ip))) return verdict;
    return { locked: true, retryAfterSeconds: (await this.check(email, ip)).retryAfterSeconds || 60 };
  }

  /**
   * Counts one attempt for the e-mail and the IP, as a failure until it succeeds; answers whether
   * both still had an attempt left (false: refuse without checking the password).
   */
  async countAttempt(email: string, ip: string): Promise<boolean> {
    const byEmail = await this.#count('email', this.#subject('email', email), this.#policy.maxPerEmail);
    const byIp = await this.#count('ip', this.#subject('ip', ip), this.#policy.maxPerIp);
    return byEmail <= this.#policy.maxPerEmail && byIp <= this.#policy.maxPerIp;
  }

  /** A counted attempt succeeded: the e-mail's count is cleared, and the IP's attempt taken back. */
  async recordSuccess(email: string, ip: string): Promise<void> {
    const em = this.#orm.em.fork();
    await em.execute(`delete from login_throttle where scope = 'email' and subject = ?`, [this.#subject('email', email)]);
    await em.execute(
      `update login_throttle set failures = greatest(failures - 1, 0),
              locked_until = case when failures - 1 >= ? then locked_until end
        where scope = 'ip' and subject = ?`,
      [this.#policy.maxPerIp, this.#subject('ip', ip)],
    );
  }

  /** One failure, atomically: a window older than `windowMs` starts over; reaching `max` locks. Answers the count. */
  async #count(scope: Scope, subject: Buffer, max: number): Promise<number> {
    const now = this.#now();
    const windowFloor = new Date(now.getTime() - this.#policy.windowMs);
    const lockedUntil = new Date(now.getTime() + this.#policy.lockoutMs);
    const rows = await this.#orm.em.fork().execute<{ failures: number }[]>(
      `insert into login_throttle as t (scope, subject, window_start, failures, locked_until)
       values (?, ?, ?, 1, case when 1 >= ? then ?::timestamptz end)
       on conflict (scope, subject) do update set
         window_start = case when t.window_start <= ? then excluded.window_start else t.window_start end,
         failures = case when t.window_start <= ? then 1 else t.failures + 1 end,
         locked_until = case when (case when t.window_start <= ? then 1 else t.failures + 1 end) >= ?
                             then ?::timestamptz else t.locked_until end
       returning failures`,
      [scope, subject, now, max, lockedUntil, windowFloor, windowFloor, windowFloor, max, lockedUntil],
    );
    return Number(rows[0]?.failures ?? 0);
  }

  /** Deletes rows whose window and lock are both over (housekeeping). */
  async sweep(): Promise<number> {
    const now = this.#now();
    const res = await this.#orm.em.fork().execute<QueryResult>(
      'delete from login_throttle where window_start <= ? and (locked_until is null or locked_until <= ?)',
      [new Date(now.getTime() - this.#policy.windowMs), now],
      'run',
    );
    return res.affectedRows;
  }
}
