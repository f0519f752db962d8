import { defineEntity, p } from '@mikro-orm/postgresql';

// Billing's tables, all in the `billing` schema (the ORM's default schema for this service).
// Money columns are bigint credits; the wallet's CHECK (balance >= 0) lives in the migration.

const AccountSchema = defineEntity({
  name: 'Account',
  tableName: 'account',
  properties: {
    id: p.uuid().primary(),
    name: p.text(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export class Account extends AccountSchema.class {}
AccountSchema.setClass(Account);

const WalletSchema = defineEntity({
  name: 'Wallet',
  tableName: 'wallet',
  properties: {
    accountId: p.uuid().primary(),
    balance: p.bigint(),
    updatedAt: p.datetime(),
  },
});
export class Wallet extends WalletSchema.class {}
WalletSchema.setClass(Wallet);

/** One credit movement. `amount` is the signed change to the balance; `reference` is unique. */
const LedgerEntrySchema = defineEntity({
  name: 'LedgerEntry',
  tableName: 'ledger_entry',
  properties: {
    id: p.bigint().primary().autoincrement(),
    accountId: p.uuid(),
    kind: p.text(),
    amount: p.bigint(),
    balanceAfter: p.bigint(),
    reference: p.text().unique(),
    keyId: p.uuid().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export class LedgerEntry extends LedgerEntrySchema.class {}
LedgerEntrySchema.setClass(LedgerEntry);

const ApiKeySchema = defineEntity({
  name: 'ApiKey',
  tableName: 'api_key',
  properties: {
    id: p.uuid().primary(),
    accountId: p.uuid(),
    name: p.text(),
    keyHash: p.blob().unique(),
    prefix: p.text(),
    lastFour: p.text(),
    createdAt: p.datetime().onCreate(() => new Date()),
    expiresAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
});
export class ApiKey extends ApiKeySchema.class {}
ApiKeySchema.setClass(ApiKey);

export const billingEntities = [Account, Wallet, LedgerEntry, ApiKey];
