/**
 * How the API reference reads: the document's own words for a client (no references to documents a
 * client does not have), a real example for every request and answer (the docs page would
 * otherwise show `"string"`), and the docs page's look: our name and mark, our favicon, and a
 * Content-Security-Policy the page keeps (no console errors).
 */

type Json = Record<string, unknown>;

/** "(spec 4.2)", "spec section 7.2", "Spec 2.4: ": the contract's section numbers, which clients do not have. */
const SPEC_REFERENCE = /\s*\((?:see )?spec(?: section)? \d+(?:\.\d+)*\)|\s*\bspec(?: section)? \d+(?:\.\d+)*(?::\s*|\b)|^Spec \d+(?:\.\d+)*(?::\s*|\.\s*)/gi;

/** A description or summary without contract section numbers (and without what they leave dangling). */
export function withoutSpecReferences(text: string): string {
  return text
    .replace(SPEC_REFERENCE, '')
    .replace(/ from the closed set of\s*\./, ' from a closed set (see ErrorBody).')
    .replace(/\s+\./g, '.')
    .replace(/\s+;/g, ';')
    .replace(/^\s+|\s+$/g, '')
    .replace(/^[a-z]/, (c) => c.toUpperCase());
}

const SERVICE = { credit_charged: 42, balance_after: 999_958 };

/** A request and its answer, per operation (`<method> <path under the base path>`). */
export const EXAMPLES: Record<string, { request?: unknown; response?: unknown; params?: Record<string, string> }> = {
  'get /models': {
    response: {
      data: [
        { id: 'gpt-4o-mini', object: 'model', created: 1_764_201_600, owned_by: 'openai', kind: 'TEXT', capabilities: ['chat/completions', 'chat', 'messages', 'messages/count_tokens', 'responses'], price_credit_per_unit: 15_000, billing_unit: 'million_tokens' },
        { id: 'gpt-image-1', object: 'model', created: 1_764_201_600, owned_by: 'openai', kind: 'IMAGE', capabilities: ['images/generations', 'images/edits'], price_credit_per_unit: 1_000, billing_unit: 'image' },
        { id: 'veo-3', object: 'model', created: 1_764_201_600, owned_by: 'google', kind: 'VIDEO', capabilities: ['videos/generations'], price_credit_per_unit: 8_000, billing_unit: 'second' },
      ],
    },
  },
  'get /models/{id}': {
    params: { id: 'gpt-4o-mini' },
    response: { id: 'gpt-4o-mini', object: 'model', created: 1_764_201_600, owned_by: 'openai', kind: 'TEXT', capabilities: ['chat/completions', 'chat', 'messages', 'messages/count_tokens', 'responses'], price_credit_per_unit: 15_000, billing_unit: 'million_tokens' },
  },
  'post /chat/completions': {
    request: {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'You answer in one sentence.' },
        { role: 'user', content: 'Why is the sky blue?' },
      ],
      max_tokens: 200,
    },
    response: {
      id: 'chatcmpl-8f2c1a',
      object: 'chat.completion',
      created: 1_764_201_600,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Air molecules scatter short blue wavelengths of sunlight far more than red ones.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 24, completion_tokens: 17, total_tokens: 41 },
      service: SERVICE,
    },
  },
  'post /messages': {
    request: { model: 'claude-sonnet', max_tokens: 256, system: 'You answer in one sentence.', messages: [{ role: 'user', content: 'Why is the sky blue?' }] },
    response: {
      id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet',
      content: [{ type: 'text', text: 'Air molecules scatter short blue wavelengths of sunlight far more than red ones.' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 21, output_tokens: 19 },
      service: SERVICE,
    },
  },
  'post /responses': {
    request: { model: 'gpt-4o-mini', instructions: 'You answer in one sentence.', input: 'Why is the sky blue?', max_output_tokens: 200 },
    response: {
      id: 'resp_67ccd2bed1ec8190',
      object: 'response',
      status: 'completed',
      model: 'gpt-4o-mini',
      output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Air molecules scatter short blue wavelengths of sunlight far more than red ones.' }] }],
      usage: { input_tokens: 22, output_tokens: 17, total_tokens: 39 },
      service: SERVICE,
    },
  },
  'post /chat': {
    request: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Why is the sky blue?' }] },
    response: { reply: 'Air molecules scatter short blue wavelengths of sunlight far more than red ones.', tokensUsed: 41, creditCharged: 1, balanceAfter: 999_999 },
  },
  'post /messages/count_tokens': {
    request: { model: 'claude-sonnet', messages: [{ role: 'user', content: 'Why is the sky blue?' }] },
    response: { input_tokens: 14 },
  },
  'post /images/generations': {
    request: { model: 'gpt-image-1', prompt: 'A lighthouse on a cliff at dawn, watercolour', size: '1024x1024', n: 1 },
    response: { created: 1_764_201_600, data: [{ b64_json: 'iVBORw0KGgoAAAANSUhEUgAA...', mime_type: 'image/png' }], usage: { images: 1 }, service: { credit_charged: 1_000, balance_after: 999_000 } },
  },
  'post /images/edits': {
    request: { model: 'gpt-image-1', prompt: 'Make the sky stormy', image: { data_url: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA...' } },
    response: { created: 1_764_201_600, data: [{ b64_json: 'iVBORw0KGgoAAAANSUhEUgAA...', mime_type: 'image/png' }], usage: { images: 1 }, service: { credit_charged: 1_000, balance_after: 998_000 } },
  },
  'get /images/jobs/{jobId}': {
    params: { jobId: 'imgjob_3f9a0c2d7b1e4a5f8c6d2e1b0a9f8e7d' },
    response: { created: 1_764_201_600, data: [{ b64_json: 'iVBORw0KGgoAAAANSUhEUgAA...', mime_type: 'image/png' }], usage: { images: 1 }, service: { credit_charged: 1_000, balance_after: 999_000 } },
  },
  'post /videos/generations': {
    request: { model: 'veo-3', prompt: 'A paper boat drifting down a rainy street, close-up', duration_seconds: 6, aspect_ratio: '16:9' },
    response: { id: 'vidjob_5d41402abc4b2a76b9719d911017c592', status: 'queued', requested_duration_seconds: 6, service: { credit_charged: 48_000, credit_refunded: 0, balance_after: 951_958 } },
  },
  'get /videos/generations/{jobId}': {
    params: { jobId: 'vidjob_5d41402abc4b2a76b9719d911017c592' },
    response: {
      id: 'vidjob_5d41402abc4b2a76b9719d911017c592',
      status: 'completed',
      requested_duration_seconds: 6,
      actual_duration_seconds: 6,
      content_url: '/v1/videos/generations/vidjob_5d41402abc4b2a76b9719d911017c592/content',
      completed_at: 1_764_201_700,
      expires_at: 1_764_288_100,
      service: { credit_charged: 48_000, credit_refunded: 0, balance_after: 951_958 },
    },
  },
  'get /videos/generations/{jobId}/content': { params: { jobId: 'vidjob_5d41402abc4b2a76b9719d911017c592' } },
};

/** An error answer as a client sees it, per status (for the error responses' examples). */
const ERROR_EXAMPLES: Record<string, Json> = {
  '400': { error: { code: 'invalid_request', message: '`messages` is required.' } },
  '401': { error: { code: 'auth_invalid', message: 'The API key does not exist.' } },
  '402': {
    error: {
      code: 'insufficient_balance',
      message:
        "This request needs 1200 credits held until it completes, and the balance available is 300 credits. The hold is the worst case, priced from max_tokens (or the model's largest output when max_tokens is not set): send a smaller max_tokens, or top up the wallet.",
    },
  },
  '404': { error: { code: 'not_found', message: 'No video job with this id.' } },
  '409': { error: { code: 'duplicate_request', message: 'This Idempotency-Key was used by a finished request.', job_id: 'imgjob_3f9a0c2d7b1e4a5f8c6d2e1b0a9f8e7d' } },
  '429': { error: { code: 'rate_limit_exceeded', message: 'Too many requests this minute.', limit_type: 'per_minute', retry_after_seconds: 12 } },
  '502': { error: { code: 'upstream_error', message: 'The provider failed; nothing was charged.' } },
  '503': { error: { code: 'system_maintenance', message: 'The gateway is in maintenance; try again later.' } },
  '504': { error: { code: 'upstream_timeout', message: 'The provider did not answer in time; nothing was charged.' } },
};

/** Every string under `node` rewritten by `fn`, for the keys documents show (descriptions and summaries). */
function rewriteTexts(node: unknown, fn: (s: string) => string): void {
  if (Array.isArray(node)) {
    for (const item of node) rewriteTexts(item, fn);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const obj = node as Json;
  for (const [key, value] of Object.entries(obj)) {
    if ((key === 'description' || key === 'summary') && typeof value === 'string') obj[key] = fn(value);
    else rewriteTexts(value, fn);
  }
}

/**
 * The OpenAPI document as clients read it (served at `<base>/openapi.json` and on the docs page):
 * no contract section numbers, an example on every request, answer and path parameter.
 */
export function presentDocument(document: Json, basePath: string): Json {
  const doc = structuredClone(document);
  rewriteTexts(doc, withoutSpecReferences);
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Json>>;
  for (const [path, operations] of Object.entries(paths)) {
    const local = path.startsWith(basePath) ? path.slice(basePath.length) : path;
    for (const [method, op] of Object.entries(operations)) {
      const example = EXAMPLES[`${method} ${local}`];
      const body = (op.requestBody as { content?: Record<string, Json> } | undefined)?.content?.['application/json'];
      if (body && example?.request !== undefined) body.example = example.request;
      for (const p of (op.parameters ?? []) as Json[]) {
        const value = example?.params?.[p.name as string];
        if (value !== undefined) p.example = value;
        if (p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key') p.example = '3b241101-e2bb-4255-8caf-4136c566a962';
      }
      for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, { content?: Record<string, Json> }>)) {
        const json = response.content?.['application/json'];
        if (!json) continue;
        if (status === '200' && example?.response !== undefined) json.example = example.response;
        else if (ERROR_EXAMPLES[status]) json.example = ERROR_EXAMPLES[status];
      }
    }
  }
  return doc;
}

/** The mark of the docs page's top bar: our name, in the bar's white. */
export const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="250" height="40" viewBox="0 0 250 40" role="img" aria-label="Generation gateway">
<rect x="2" y="6" width="28" height="28" rx="6" fill="none" stroke="#ffffff" stroke-width="3"/>
<path d="M10 20h12M17 14l6 6-6 6" fill="none" stroke="#ffffff" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/>
<text x="42" y="27" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="20" font-weight="600" fill="#ffffff">Generation gateway</text>
</svg>`;

const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect x="2" y="2" width="28" height="28" rx="6" fill="#1b1b1b"/><path d="M9 16h12M16 10l6 6-6 6" fill="none" stroke="#ffffff" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/></svg>`;

/** The top bar keeps our mark only: the document is ours, there is no other URL to explore. */
const THEME_CSS = `.swagger-ui .topbar .download-url-wrapper { display: none; }
.swagger-ui .topbar { background-color: #1b1b1b; }
.swagger-ui .info .title small.version-stamp { background-color: #3b4151; }
`;

/** Options of @fastify/swagger-ui for our docs page. */
export const UI_OPTIONS = {
  theme: {
    title: 'Generation gateway API reference',
    css: [{ filename: 'gateway.css', content: THEME_CSS }],
    favicon: [{ filename: 'favicon.svg', rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: FAVICON_SVG }],
  },
  logo: { type: 'image/svg+xml', content: Buffer.from(LOGO_SVG) },
  uiConfig: { deepLinking: true, displayRequestDuration: true, defaultModelsExpandDepth: 0, tryItOutEnabled: false },
  validatorUrl: false as const,
  staticCSP: true,
  // Swagger UI sets inline styles (its layout) and fetches nothing from elsewhere: allow the
  // former, drop the validator's host, and do not ask a plain-http local install to upgrade.
  transformStaticCSP: (header: string) =>
    header
      .replace(/style-src ([^;]*);/, (_m, v: string) => `style-src ${v.trim()} 'unsafe-inline';`)
      .replace(' validator.swagger.io', '')
      .replace(/\s*upgrade-insecure-requests;?/, ''),
};
