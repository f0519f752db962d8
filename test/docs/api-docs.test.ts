import { Ajv } from 'ajv';
import { chromium, type Browser } from 'playwright-core';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeGateway } from '../../services/edge-gateway/test/support/fake-gateway.ts';

// The API reference as a client meets it: the document at /v1/openapi.json and the page at
// /v1/docs, served by the edge app (its gRPC clients faked: the reference calls nothing).

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
let app: Awaited<ReturnType<typeof fakeGateway>>['app'];
let base = '';
let doc: Record<string, unknown>;

beforeAll(async () => {
  ({ app } = await fakeGateway());
  base = await app.listen({ port: 0, host: '127.0.0.1' });
  doc = (await (await fetch(`${base}/v1/openapi.json`)).json()) as Record<string, unknown>;
});
afterAll(() => app?.close());

type Op = { requestBody?: { content: Record<string, { example?: unknown }> }; responses: Record<string, { content?: Record<string, { example?: unknown }> }>; parameters?: Array<{ in: string; name: string; example?: unknown }> };
const operations = () => Object.entries(doc.paths as Record<string, Record<string, Op>>).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ id: `${method} ${path}`, method, path, op })));
const pointer = (...parts: string[]) => `#/${parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

describe('the OpenAPI document', () => {
  it('names no document a client does not have (no contract section numbers)', () => {
    const texts: string[] = [];
    JSON.stringify(doc, (key, value: unknown) => {
      if ((key === 'description' || key === 'summary' || key === 'title') && typeof value === 'string') texts.push(value);
      return value;
    });
    expect(texts.length).toBeGreaterThan(20);
    expect(texts.filter((t) => /\bspec(ification)?\b|DECISIONS|\.\.\/shared/i.test(t))).toEqual([]);
  });

  it('has a real example for every JSON request, answer and path parameter, each valid against its schema', () => {
    const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema(doc, 'doc');
    const problems: string[] = [];
    for (const { id, path, method, op } of operations()) {
      const body = op.requestBody?.content['application/json'];
      if (body) {
        if (body.example === undefined) problems.push(`${id}: request without example`);
        else if (!ajv.validate({ $ref: `doc${pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema')}` }, body.example)) problems.push(`${id} request: ${ajv.errorsText()}`);
      }
      for (const [status, response] of Object.entries(op.responses)) {
        const json = response.content?.['application/json'];
        if (!json) continue;
        if (json.example === undefined) problems.push(`${id} ${status}: answer without example`);
        else if (!ajv.validate({ $ref: `doc${pointer('paths', path, method, 'responses', status, 'content', 'application/json', 'schema')}` }, json.example)) problems.push(`${id} ${status}: ${ajv.errorsText()}`);
      }
      for (const p of op.parameters ?? []) if (p.in === 'path' && p.example === undefined) problems.push(`${id}: path parameter ${p.name} without example`);
    }
    expect(problems).toEqual([]);
    expect(operations().length).toBeGreaterThan(10);
  });
});

describe.skipIf(!CHROMIUM)('the docs page (headless Chromium)', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox'] });
  });
  afterAll(() => browser?.close());

  it('is ours (title, mark, no URL bar to explore other documents), shows the examples, and logs no console error (CSP kept)', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on('console', (m) => (m.type() === 'error' || m.type() === 'warning') && problems.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    const res = await page.goto(`${base}/v1/docs`);
    expect(res!.headers()['content-security-policy']).toMatch(/script-src 'self'/);
    await page.locator('#operations-text-post_v1_chat_completions').click();
    await page.getByText('Why is the sky blue?').first().waitFor();
    expect(await page.title()).toBe('Generation gateway API reference');
    const topbar = await page.locator('.topbar').innerHTML();
    expect(topbar).not.toMatch(/fastify/i);
    expect(await page.locator('.topbar img').getAttribute('src')).toMatch(/^data:image\/svg\+xml;base64,/);
    expect(await page.locator('.download-url-wrapper').isVisible()).toBe(false);
    const shown = await page.locator('#operations-text-post_v1_chat_completions').innerText();
    expect(shown).toContain('"model": "gpt-4o-mini"');
    expect(shown).not.toContain('"string"');
    await page.screenshot({ path: 'test-results/screenshots/api-docs-1280.png', fullPage: false });
    expect(problems).toEqual([]);
    await page.close();
  });
});
