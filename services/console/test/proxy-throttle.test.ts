import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Members } from '../src/members/members.ts';
import { InjectBrowser } from './browser.ts';
import { FakeBilling } from './fake-billing.ts';
import { TEST_ORIGIN as ORIGIN, openTestApp } from './support.ts';

/** The ingress, as the console sees its peer: a private address, trusted as `uniquelocal`. */
const INGRESS = '10.0.0.5';

// Behind an ingress, the per-IP sign-in limit must count the address the ingress saw (the
// rightmost X-Forwarded-For entry it appended), not what the client wrote to the left of it,
// and not the ingress itself.
describe('sign-in throttling behind an ingress (CONSOLE_TRUST_PROXY=uniquelocal, two free failures per IP, the third checked, then delays)', () => {
  let app: FastifyInstance;
  let members: Members;
  const billing = new FakeBilling();
  const account = randomUUID();

  beforeAll(async () => {
    billing.addAccount(account, 'Alpha');
    const opened = await openTestApp(billing, { throttle: { freePerEmail: 100, freePerIp: 2 }, trustProxy: ['uniquelocal'] });
    ({ app, members } = opened);
    return opened.close;
  });

  /** A sign-in through the ingress; `forwarded` is the X-Forwarded-For it passes on. */
  async function signIn(forwarded: string, email: string, password: string): Promise<number> {
    const browser = new InjectBrowser(app, ORIGIN);
    await browser.get('/login');
    const res = await app.inject({
      method: 'POST',
      url: '/login',
      remoteAddress: INGRESS,
      headers: {
        cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        origin: ORIGIN,
        'content-type': 'application/x-www-form-urlencoded',
        'x-forwarded-for': forwarded,
      },
      payload: new URLSearchParams({ csrf_token: browser.csrf(), email, password }).toString(),
    });
    return res.statusCode;
  }

  /** A member and the password the operator generated for it. */
  async function member(): Promise<{ email: string; password: string }> {
    const email = `m-${randomUUID()}@example.com`;
    const { memberId } = await members.create(account, email);
    return { email, password: await members.setGeneratedPassword(memberId) };
  }

  it('a client inventing the first hop is still counted under its own address', async () => {
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push(await signIn(`198.51.100.${i + 1}, 192.0.2.1`, `spray-${i}@example.com`, 'guess guess guess'));
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
  });

  it("nobody can spend another person's budget by writing their address first, nor everyone's through the ingress", async () => {
    const { email, password } = await member();
    for (let i = 0; i < 3; i++) await signIn(`203.0.113.9, 192.0.2.66`, `nobody-${i}@example.com`, 'guess guess guess');
    expect(await signIn('203.0.113.9', email, password)).toBe(303);
    expect(await signIn('192.0.2.77', email, password)).toBe(303);
  });
});
