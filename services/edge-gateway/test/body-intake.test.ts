import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { fakeGateway, chatAnswer, type FakeGateway } from './support/fake-gateway.ts';
import { create } from '@bufbuild/protobuf';
import { billingV1 } from '@gw/contracts';

const MIB = 1024 * 1024;
let gw: FakeGateway;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await gw?.app.close();
});

/** A fake billing and text service that answer: a text request succeeds (200). */
const answering = () => ({
  money: {
    authorize: async () => create(billingV1.AuthorizeResponseSchema, {}),
    settle: async () => create(billingV1.SettleResponseSchema, { creditCharged: 1n, balanceAfter: 99n }),
    release: async () => create(billingV1.ReleaseResponseSchema, {}),
  },
  generate: { generate: async () => chatAnswer(), generateStream: () => (async function* () {})() },
});

async function listen(gateway: FakeGateway): Promise<number> {
  await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  return (gateway.app.server.address() as { port: number }).port;
}

/** A raw connection that sends `head` (and `body`, if any) and collects what comes back until closed. */
function rawRequest(port: number, head: string, body = ''): { socket: Socket; received: Promise<{ text: string; closedAfterMs: number }> } {
  const started = Date.now();
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let text = '';
  socket.on('data', (d) => (text += d.toString()));
  socket.write(head + body);
  const received = new Promise<{ text: string; closedAfterMs: number }>((resolve) => socket.on('close', () => resolve({ text, closedAfterMs: Date.now() - started })));
  socket.on('error', () => {});
  return { socket, received };
}

const head = (port: number, key: string, length: number) =>
  `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

const chatBody = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });

describe('request intake bounded in time and bytes (issue 20 finding 1)', () => {
  it('a socket declaring 32 MiB that sends nothing reserves nothing, blocks no other account, and is cut by the body timeout', async () => {
    // A budget far below the declared size: counting declared lengths, the idle socket would fill it.
    gw = await fakeGateway({ bodyBudget: { totalBytes: 1 * MIB, perOwnerBytes: 1 * MIB }, deps: { ...answering(), httpTimeouts: { bodyIdleTimeoutMs: 400 } } });
    const port = await listen(gw);
    const idle = rawRequest(port, head(port, gw.keys.a, 32 * MIB));
    await new Promise((r) => setTimeout(r, 100));
    expect(gw.deps.bodyBudget.used()).toBe(0);

    const other = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.keys.b}`, 'content-type': 'application/json' },
      body: chatBody,
    });
    expect(other.status).toBe(200);
    expect(((await other.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe('hi');
    // The same account too: what it declared is not held either.
    const same = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.keys.a}`, 'content-type': 'application/json' },
      body: chatBody,
    });
    expect(same.status).toBe(200);

    const { text } = await idle.received;
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text.toLowerCase()).toContain('connection: close');
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).error).toEqual({
      code: 'invalid_request',
      message: 'The request body stopped arriving: no byte came for 0.4 s. Send the whole body without pausing.',
    });
    expect(gw.deps.bodyBudget.used()).toBe(0);
  });

  it('a body that stops half-way is cut too, and what arrived is given back', async () => {
    gw = await fakeGateway({ deps: { ...answering(), httpTimeouts: { bodyIdleTimeoutMs: 400 } } });
    const port = await listen(gw);
    const idle = rawRequest(port, head(port, gw.keys.a, 100_000), 'x'.repeat(50_000));
    await new Promise((r) => setTimeout(r, 150));
    expect(gw.deps.bodyBudget.used('acct-a')).toBe(50_000);
    const { text } = await idle.received;
    expect(text).toContain('"code":"invalid_request"');
    expect(gw.deps.bodyBudget.used()).toBe(0);
  });

  it('bytes are counted as they arrive: an account past its share mid-body gets 429 in_flight_bytes, another account is served', async () => {
    gw = await fakeGateway({ bodyBudget: { totalBytes: 4 * MIB, perOwnerBytes: 1 * MIB }, deps: { ...answering(), httpTimeouts: { bodyIdleTimeoutMs: 5_000 } } });
    const port = await listen(gw);
    // Two slow uploads of account a: 0.6 MiB arrived each; the second passes the account's 1 MiB.
    const first = rawRequest(port, head(port, gw.keys.a, 2 * MIB), ' '.repeat(0.6 * MIB));
    await new Promise((r) => setTimeout(r, 150));
    const second = rawRequest(port, head(port, gw.keys.a, 2 * MIB), ' '.repeat(0.6 * MIB));
    const { text } = await second.received;
    expect(text).toMatch(/^HTTP\/1\.1 429 /);
    expect(text).toContain('"limit_type":"in_flight_bytes"');
    expect(text.toLowerCase()).toContain('retry-after: 1');
    const other = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.keys.b}`, 'content-type': 'application/json' },
      body: chatBody,
    });
    expect(other.status).toBe(200);
    first.socket.destroy();
  });

  it('a request alone fits whatever its size, as before (its reservation grows with what arrives)', async () => {
    gw = await fakeGateway({ bodyBudget: { totalBytes: 64 * 1024, perOwnerBytes: 16 * 1024 }, deps: answering() });
    const big = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(300_000) }] });
    const res = await gw.app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { authorization: `Bearer ${gw.keys.a}`, 'content-type': 'application/json' }, payload: big });
    expect(res.statusCode).toBe(200);
    expect(gw.deps.bodyBudget.used()).toBe(0);
  });

  it.each([
    ['refused by auth', '/v1/chat/completions', 'Bearer nope', /^HTTP\/1\.1 401 /],
    ['to no route', '/v1/no-such-route', 'Bearer KEY', /^HTTP\/1\.1 404 /],
    ['to no route outside the API', '/elsewhere', 'Bearer KEY', /^HTTP\/1\.1 404 /],
  ])('a request %s is answered at once and its connection closed, its declared body never awaited', async (_name, path, auth, status) => {
    gw = await fakeGateway();
    const port = await listen(gw);
    const request = `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.replace('KEY', gw.keys.a)}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n`;
    const { text } = await rawRequest(port, request).received; // resolves when the server closes it
    expect(text).toMatch(status);
    expect(text.toLowerCase()).toContain('connection: close');
  });

  it('an error after the whole body was read keeps the connection', async () => {
    gw = await fakeGateway();
    const port = await listen(gw);
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.keys.a}`, 'content-type': 'application/json' }, body: '{"model":"m"}' });
    expect(res.status).toBe(400);
    expect(res.headers.get('connection')).toBe('keep-alive');
  });

  it('headers that never finish are cut by the headers timeout', async () => {
    gw = await fakeGateway({ deps: { httpTimeouts: { headersTimeoutMs: 300 } } });
    const port = await listen(gw);
    const slow = rawRequest(port, `GET /v1/models HTTP/1.1\r\nHost: x\r\n`);
    const { text } = await slow.received;
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).error).toEqual({ code: 'invalid_request', message: 'The request was not received in time.' });
  });

  it('an idle keep-alive connection is closed after its timeout', async () => {
    gw = await fakeGateway({ deps: { httpTimeouts: { keepAliveTimeoutMs: 300 } } });
    const port = await listen(gw);
    const conn = rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    const { text } = await conn.received;
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
  });
});
