import type { KeyLimitRow } from '../domain/key-limits.ts';
import type { KeyDetailsRow } from '../domain/account-keys.ts';
import type { UsageSums } from '../domain/usage-report.ts';

// Domain rows as the billing messages carry them (shared by the three services' handlers).

export const ms = (d: Date | null | undefined): bigint => (d ? BigInt(new Date(d).getTime()) : 0n);
export const limits = (rows: KeyLimitRow[]) => rows.map((r) => ({ limitType: r.limit_type, period: r.period, value: BigInt(r.value) }));
export const details = (k: KeyDetailsRow) => ({
  info: {
    keyId: k.id,
    accountId: k.account_id,
    name: k.name,
    prefix: k.prefix,
    lastFour: k.last_four,
    createdAtUnixMs: ms(k.created_at),
    expiresAtUnixMs: ms(k.expires_at),
    revokedAtUnixMs: ms(k.revoked_at),
  },
  lastUsedAtUnixMs: ms(k.last_used_at),
  limits: limits(k.limits),
});
export const sums = (s: UsageSums) => ({
  requests: BigInt(s.requests),
  inputTokens: BigInt(s.input_tokens),
  outputTokens: BigInt(s.output_tokens),
  totalTokens: BigInt(s.total_tokens),
  images: BigInt(s.images),
  videoSeconds: BigInt(s.video_seconds),
  credits: BigInt(s.credits),
});
