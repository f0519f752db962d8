/**
 * Roles of account members, and what each may do. One table, read by the page guard (every
 * member route names the permission it needs), by the billing guard (every billing call the
 * console makes for a member) and by the pages (what each member is shown).
 *
 * - owner: everything, including members of any role (an account always keeps one owner) and alerts.
 * - admin: every key, its limits and expiry; usage, activity, balance; members other than owners;
 *   the audit trail.
 *
 * A new page names its permission in its route config; a new billing call the console makes is
 * added to `billing/guard.ts` with the permission it needs (anything not listed there is refused).
 * - developer: creates keys and manages the keys they created; usage, activity, balance.
 * - viewer: usage, activity and balance only.
 */
export const ROLES = ['owner', 'admin', 'developer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export type Permission =
  /** The key list and a key's page. */
  | 'keys.view'
  /** Create a key (and manage the keys one created). */
  | 'keys.create'
  /** Limits, expiry and revocation of every key of the account. */
  | 'keys.manage-all'
  /** Usage, activity and their CSV. */
  | 'usage.view'
  /** The wallet's ledger. */
  | 'balance.view'
  /** Invite members, change roles, remove members (owners: only by an owner). */
  | 'members.manage'
  /** Low-balance and budget alerts, webhook endpoints and their deliveries (owners). */
  | 'alerts.manage'
  /** The account's audit trail (owners and admins). */
  | 'audit.view'
  /** One's own password, time zone and sessions: every member. */
  | 'self';

export const PERMISSIONS: readonly Permission[] = ['keys.view', 'keys.create', 'keys.manage-all', 'usage.view', 'balance.view', 'members.manage', 'alerts.manage', 'audit.view', 'self'];

const GRANTS: Record<Role, ReadonlySet<Permission>> = {
  owner: new Set(['keys.view', 'keys.create', 'keys.manage-all', 'usage.view', 'balance.view', 'members.manage', 'alerts.manage', 'audit.view', 'self']),
  admin: new Set(['keys.view', 'keys.create', 'keys.manage-all', 'usage.view', 'balance.view', 'members.manage', 'audit.view', 'self']),
  developer: new Set(['keys.view', 'keys.create', 'usage.view', 'balance.view', 'self']),
  viewer: new Set(['usage.view', 'balance.view', 'self']),
};

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function can(role: Role, permission: Permission): boolean {
  return GRANTS[role]?.has(permission) ?? false;
}

/** Whether `actor` may give `target` its role or take it away: owners only by an owner. */
export function mayAssign(actor: Role, role: Role): boolean {
  return can(actor, 'members.manage') && (role !== 'owner' || actor === 'owner');
}

/** The first page a member of this role lands on. */
export function homeOf(role: Role): string {
  return can(role, 'keys.view') ? '/keys' : '/usage';
}

export const ROLE_LABEL: Record<Role, string> = {
  owner: 'Owner: everything, members of every role',
  admin: 'Admin: every key, limits, usage, members other than owners',
  developer: 'Developer: creates keys, manages the keys they created, sees usage',
  viewer: 'Viewer: usage and balance only',
};

/** Refused for want of a role: answered 403 with a page saying so. */
export class ForbiddenError extends Error {
  override name = 'ForbiddenError';
}
