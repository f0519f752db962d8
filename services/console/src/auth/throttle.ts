import ipaddr from 'ipaddr.js';
import type { MikroORM, QueryResult } from '@mikro-orm/postgresql';
import type { Hmac } from './secrets.ts';

/**
 * Sign-in throttling with growing delays, never a lock. Shared by every console replica through
 * the database. Each password check is counted, before it is made, against up to three subjects:
 *
 * - `pair`: this e-mail address from this client network (or, from a browser that signed in to
 *   this address before, from that browser: see `device`). A few free failures, then each further
 *   attempt has to wait a delay that doubles with every failure, up to `maxDelayMs`.
 * - `ip`: the client network, over every address it tries (spraying one password over many
 *   accounts). Many more free failures (offices share an address), then growing delays.
 * - `email`: the address over every network (a distributed guesser). Its delays apply only to
 *   attempts from a network that has already failed for this address. A network or browser with
 *   no failure of its own for the address is never held back by the failures of others, so
 *   whatever an attacker does elsewhere, the owner's right password passes.
 *
 * Counters decay: each is a score halving every `halfLifeMs`, not a window that starts over, so
 * a guesser who waits a quarter of an hour gets nothing back for free. A success clears its pair
 * and takes its own attempt back from the others; refused attempts check no password and count
 * nothing. The rows of one attempt are locked together in one transaction, so attempts sent at
 * once are judged one after another: a burst gets no more checks than a patient guesser.
 */

export interface ThrottlePolicy {
  /** Free failures of one address from one network (or browser). */
  freePerPair: number;
  /** Free failures of one address from every network together. */
  freePerEmail: number;
  /** Free failures of one network over every address. */
  freePerIp: number;
  /** The first delay past the free failures; each further failure doubles it. */
  baseDelayMs: number;
  /** The longest delay between two checks. */
  maxDelayMs: number;
  /** A failure's weight halves after this long. */
  halfLifeMs: number;
}

export const DEFAULT_THROTTLE: ThrottlePolicy = {
  freePerPair: 3,
  freePerEmail: 10,
  freePerIp: 30,
  baseDelayMs: 2_000,
  maxDelayMs: 15 * 60_000,
  halfLifeMs: 60 * 60_000,
};

export interface ThrottleVerdict {
  locked: boolean;
  /** Whole seconds until a password will be checked (0 when not held back). */
  retryAfterSeconds: number;
}

/** Who is attempting: the client address and, when the browser proves one, its device id. */
export interface AttemptOrigin {
  ip: string;
  /** A browser that signed in to this address before (device cookie), or the session asking. */
  device?: string | undefined;
}

type Scope = 'pair' | 'email' | 'ip';

/** What a held-back attempt is told: `Too many <what>. Try again in N seconds/minutes.` */
export function lockedMessage(verdict: ThrottleVerdict, what: string): string {
  const s = verdict.retryAfterSeconds;
  if (s < 120) return `Too many ${what}. Try again in ${s} second${s === 1 ? '' : 's'}.`;
  const minutes = Math.ceil(s / 60);
  return `Too many ${what}. Try again in ${minutes} minutes.`;
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

/** The delay owed after `score` failures: none up to `free`, then base · 2^(score − free − 1), capped. */
export function delayFor(score: number, free: number, policy: Pick<ThrottlePolicy, 'baseDelayMs' | 'maxDelayMs'>): number {
  const over = score - free;
  if (over < 1e-9) return 0;
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, Math.ceil(over - 1e-9) - 1));
}

interface Row {
  scope: Scope;
  subject: Buffer;
  score: number;
  last_at: Date;
}

export class LoginThrottle {
  readonly #orm: MikroORM;
  readonly #hmac: Hmac;
  readonly #policy: ThrottlePolicy;
  readonly #now: () => Date;

  constructor(orm: MikroORM, hmac: Hmac, policy: Partial<ThrottlePolicy> = {}, now: () => Date = () => new Date()) {
    this.#orm = orm;
    this.#hmac = hmac;
    this.#policy = { ...DEFAULT_THROTTLE, ...policy };
    this.#now = now;
  }

  #email(email: string): string {
    return email.trim().normalize('NFKC').toLowerCase();
  }

  /** The subjects an attempt is judged by (HMACs: people type passwords into the e-mail field). */
  #subjects(email: string, from: AttemptOrigin): Array<{ scope: Scope; subject: Buffer; free: number }> {
    const address = this.#email(email);
    const network = clientNetwork(from.ip);
    const pairKey = from.device ? `device\0${from.device}\0${address}` : `net\0${network}\0${address}`;
    return [
      { scope: 'pair', subject: this.#hmac.digest('throttle-pair', pairKey), free: this.#policy.freePerPair },
      { scope: 'email', subject: this.#hmac.digest('throttle-email', address), free: this.#policy.freePerEmail },
      { scope: 'ip', subject: this.#hmac.digest('throttle-ip', network), free: this.#policy.freePerIp },
    ];
  }

  #decayed(score: number, lastAt: Date, now: Date): number {
    const elapsed = Math.max(0, now.getTime() - new Date(lastAt).getTime());
    return score * 0.5 ** (elapsed / this.#policy.halfLifeMs);
  }

  /**
   * Whether a password may be checked now for this e-mail from this origin. When it may, the
   * attempt is counted first (as a failure until `recordSuccess`); when not, nothing is counted
   * and the verdict says how long to wait.
   */
  async admit(email: string, from: AttemptOrigin): Promise<ThrottleVerdict> {
    const subjects = this.#subjects(email, from);
    const now = this.#now();
    return this.#orm.em.fork().transactional(async (tx) => {
      // Rows made if missing, then locked in a fixed order (no deadlock between two attempts).
      for (const s of subjects) {
        await tx.execute(
          `insert into login_attempt (scope, subject, score, last_at) values (?, ?, 0, ?) on conflict (scope, subject) do nothing`,
          [s.scope, s.subject, now],
        );
      }
      const rows = await tx.execute<Row[]>(
        `select scope, subject, score, last_at from login_attempt
          where (scope, subject) in ((?, ?), (?, ?), (?, ?)) order by scope, subject for update`,
        subjects.flatMap((s) => [s.scope, s.subject]),
      );
      const state = new Map(rows.map((r) => [r.scope, { score: this.#decayed(Number(r.score), r.last_at, now), lastAt: new Date(r.last_at) }]));
      const pairScore = state.get('pair')?.score ?? 0;
      let waitMs = 0;
      for (const s of subjects) {
        // The address's own counter holds back only networks or browsers that failed for it.
        if (s.scope === 'email' && pairScore < 0.5) continue;
        // A browser that signed in to this address before is judged by its own failures only.
        if (s.scope === 'ip' && from.device) continue;
        const st = state.get(s.scope);
        if (!st) continue;
        const due = st.lastAt.getTime() + delayFor(st.score, s.free, this.#policy);
        waitMs = Math.max(waitMs, due - now.getTime());
      }
      if (waitMs > 0) return { locked: true, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
      for (const s of subjects) {
        await tx.execute('update login_attempt set score = ?, last_at = ? where scope = ? and subject = ?', [
          (state.get(s.scope)?.score ?? 0) + 1,
          now,
          s.scope,
          s.subject,
        ]);
      }
      return { locked: false, retryAfterSeconds: 0 };
    });
  }

  /** A counted attempt succeeded: its pair is cleared, and its attempt taken back from the others. */
  async recordSuccess(email: string, from: AttemptOrigin): Promise<void> {
    const em = this.#orm.em.fork();
    for (const s of this.#subjects(email, from)) {
      if (s.scope === 'pair') await em.execute('delete from login_attempt where scope = ? and subject = ?', [s.scope, s.subject]);
      else await em.execute('update login_attempt set score = greatest(score - 1, 0) where scope = ? and subject = ?', [s.scope, s.subject]);
    }
  }

  /** Deletes rows whose score has decayed to nearly nothing (housekeeping). */
  async sweep(): Promise<number> {
    // score · 2^(−age/halfLife) < 0.01  ⇔  age > halfLife · log2(100 · score)
    const res = await this.#orm.em.fork().execute<QueryResult>(
      `delete from login_attempt
        where score <= 0.01
           or last_at <= ?::timestamptz - make_interval(secs => ? * log(2, greatest(100 * score, 1)::numeric)::float8)`,
      [this.#now(), this.#policy.halfLifeMs / 1000],
      'run',
    );
    return res.affectedRows;
  }
}
