import type { billingV1 } from '@gw/contracts';

export type KeyStatus = 'active' | 'expired' | 'revoked';

export const LIMIT_TYPES = ['spending', 'requests', 'tokens'] as const;
export const LIMIT_PERIODS = ['daily', 'monthly', 'lifetime'] as const;

export interface KeyLimitView {
  type: string;
  period: string;
  value: bigint;
}

/** A key as the dashboard shows it: never more than its prefix and last four characters. */
export interface KeyView {
  id: string;
  name: string;
  /** e.g. `gwk_AbC1…xYz9` */
  display: string;
  createdAt: bigint;
  lastUsedAt: bigint;
  expiresAt: bigint;
  revokedAt: bigint;
  status: KeyStatus;
  limits: KeyLimitView[];
}

export function toKeyView(k: billingV1.KeyDetails, nowMs: number): KeyView {
  const info = k.info;
  const revokedAt = info?.revokedAtUnixMs ?? 0n;
  const expiresAt = info?.expiresAtUnixMs ?? 0n;
  const status: KeyStatus = revokedAt > 0n ? 'revoked' : expiresAt > 0n && expiresAt <= BigInt(nowMs) ? 'expired' : 'active';
  return {
    id: info?.keyId ?? '',
    name: info?.name ?? '',
    display: `${info?.prefix ?? ''}\u2026${info?.lastFour ?? ''}`,
    createdAt: info?.createdAtUnixMs ?? 0n,
    lastUsedAt: k.lastUsedAtUnixMs,
    expiresAt,
    revokedAt,
    status,
    limits: k.limits.map((l) => ({ type: l.limitType, period: l.period, value: l.value })),
  };
}

const UNIT: Record<string, string> = { spending: 'credits', requests: 'requests', tokens: 'tokens' };
const PERIOD: Record<string, string> = { daily: 'per day', monthly: 'per month', lifetime: 'in total' };

/** `10,000 credits per day` */
export function describeLimit(l: KeyLimitView, format: (v: bigint) => string): string {
  return `${format(l.value)} ${UNIT[l.type] ?? l.type} ${PERIOD[l.period] ?? l.period}`;
}
