import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAdminApp } from '../src/app.ts';
import { FakeBilling } from './fake-billing.ts';
import { testApp, testOrm } from './support.ts';

const ADMIN_TOKEN = 'admin-token-of-at-least-thirty-two-characters';

describe('operator endpoints on a port of their own (CONSOLE_ADMIN_PORT)', () => {
  let orm: MikroORM;
  const billing = new FakeBilling();
  const account = randomUUID();

  beforeAll(async () => {
    orm = await testOrm();
    billing.addAccount(account, 'Alpha');
  });
  afterAll(() => orm?.close());

  it('the pages\' app does not serve /internal/* at all; the admin app serves only that', async () => {
    const { app, deps } = await testApp(orm, billing, { adminToken: ADMIN_TOKEN, adminOnOwnPort: true });
    const adminApp = await buildAdminApp(deps);
    try {
      const create = { method: 'POST' as const, url: '/internal/members', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { account_id: account, email: `p-${randomUUID()}@example.com`, role: 'viewer' } };
      expect((await app.inject(create)).statusCode).toBe(404);
      const made = await adminApp.inject(create);
      expect(made.statusCode).toBe(201);
      expect(made.json()).toMatchObject({ role: 'viewer', set_password_url: expect.stringContaining('/set-password?token=') });
      expect((await adminApp.inject({ ...create, headers: {} })).statusCode).toBe(401);
      expect((await adminApp.inject('/keys')).statusCode).toBe(404);
      expect((await adminApp.inject('/login')).statusCode).toBe(404);
      expect((await app.inject('/login')).statusCode).toBe(200);
    } finally {
      await app.close();
      await adminApp.close();
    }
  });
});
