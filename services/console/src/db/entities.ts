import { defineEntity, p } from '@mikro-orm/postgresql';

// The console's tables, all in its own `console` schema. Secrets are never stored: sessions and
// set-password tokens are kept as HMACs of the values the browser holds, passwords as argon2id.

/** A person who signs in to the dashboard of one account. */
const MemberSchema = defineEntity({
  name: 'Member',
  tableName: 'member',
  properties: {
    id: p.uuid().primary(),
    accountId: p.uuid(),
    /** Lower-cased; unique across accounts (one login, one account). */
    email: p.text().unique(),
    /** argon2id PHC string; null until the member follows their set-password link. */
    passwordHash: p.text().nullable(),
    /** IANA zone for displaying times; null: the account's zone. */
    timeZone: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    passwordChangedAt: p.datetime().nullable(),
  },
});
export class Member extends MemberSchema.class {}
MemberSchema.setClass(Member);

/** A signed-in browser. Ends after `idle` without requests or at `expiresAt`, whichever is first. */
const SessionSchema = defineEntity({
  name: 'Session',
  tableName: 'session',
  properties: {
    idHash: p.blob().primary(),
    memberId: p.uuid(),
    createdAt: p.datetime(),
    lastSeenAt: p.datetime(),
    expiresAt: p.datetime(),
  },
});
export class Session extends SessionSchema.class {}
SessionSchema.setClass(Session);

/** One-time link that lets a member choose a password. */
const PasswordTokenSchema = defineEntity({
  name: 'PasswordToken',
  tableName: 'password_token',
  properties: {
    tokenHash: p.blob().primary(),
    memberId: p.uuid(),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    usedAt: p.datetime().nullable(),
  },
});
export class PasswordToken extends PasswordTokenSchema.class {}
PasswordTokenSchema.setClass(PasswordToken);

export const consoleEntities = [Member, Session, PasswordToken];
