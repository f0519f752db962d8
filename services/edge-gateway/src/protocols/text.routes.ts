import { textV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { ROUTE_DOCS } from '../openapi/schemas.ts';
import { resolveModel } from '../generation/resolve-model.ts';
import { anthropicBeta, preflightText, routesOf, runText, validBody, type ClientDialect } from '../generation/text-request.ts';
import { REMOVED_TOOLS_HEADER } from '@gw/translate';
import { headerList } from '../http/quote.ts';

/** The three imitated text protocols: same pipeline, each in its own dialect. */
const PROTOCOLS: Array<{ path: 'chat/completions' | 'messages' | 'responses'; dialect: ClientDialect }> = [
  { path: 'chat/completions', dialect: 'chat' },
  { path: 'messages', dialect: 'messages' },
  { path: 'responses', dialect: 'responses' },
];

const LEGACY_ROLES = new Set(['system', 'user', 'assistant']);

/** The content type Fastify gives a JSON answer it serialises itself. */
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Largest text request body: the messages API's own request limit (32 MB), room for long contexts
 * and base64 images in content. The internal call that carries it allows a little more
 * (`MAX_MESSAGE_BYTES` in service-kit).
 */
export const TEXT_BODY_LIMIT = 32 * 1024 * 1024;

/** `POST /chat` (spec 4.3): `{model, messages: [{role, content: string}]}`, never streamed. */
function legacyBody(body: unknown): Record<string, unknown> {
  const b = validBody('chat', body);
  const problems: string[] = [];
  (b.messages as unknown[]).forEach((m, i) => {
    const msg = m as Record<string, unknown>;
    if (!LEGACY_ROLES.has(msg.role as string)) problems.push(`messages[${i}].role must be one of system, user, assistant`);
    if (typeof msg.content !== 'string') problems.push(`messages[${i}].content must be a string`);
  });
  if (b.stream !== undefined && b.stream !== false) problems.push('stream is not supported on /chat; use /chat/completions');
  if (problems.length > 0) throw new GatewayError('invalid_request', `Invalid request: ${problems.join('; ')}.`);
  return { model: b.model, messages: b.messages };
}

/** `POST /messages/count_tokens` (spec 4.5): a messages request without `max_tokens` or `stream`. */
function countTokensBody(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return validBody('messages', body);
  const { max_tokens: _cap, stream: _stream, ...rest } = body as Record<string, unknown>;
  validBody('messages', { ...rest, max_tokens: 1 });
  return rest;
}

/** Text generation (spec 4.2 to 4.6). Generation requests: operator switches apply (step 3). */
export async function textRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  for (const { path, dialect } of PROTOCOLS) {
    const config = { deferRateLimit: true, messagesProtocol: dialect === 'messages', generation: true };
    app.post(`/${path}`, { config, bodyLimit: TEXT_BODY_LIMIT, schema: ROUTE_DOCS[path] }, async (request, reply) => {
      const { body, model, anthropicBeta: betas, translated } = preflightText(deps, request, dialect, path);
      const removed = translated.removedTools;
      // On the raw response, so that a stream's head (written there) carries it too.
      if (removed.length > 0) reply.raw.setHeader(REMOVED_TOOLS_HEADER, headerList(removed));
      const result = await runText(deps, request, reply, { dialect, endpoint: path, body, model, translated, anthropicBeta: betas });
      // The answer is JSON text already, `service` included: sent as it is.
      return result ? reply.type(JSON_TYPE).send(result.body) : reply;
    });
  }

  app.post('/chat', { config: { deferRateLimit: true, generation: true }, bodyLimit: TEXT_BODY_LIMIT, schema: ROUTE_DOCS.chat }, async (request, reply) => {
    const { body, model, translated } = preflightText(deps, request, 'chat', 'chat', legacyBody);
    const result = await runText(deps, request, reply, { dialect: 'chat', endpoint: 'chat', body, model, translated });
    const answer = JSON.parse(result!.body.toString('utf8')) as { choices?: unknown };
    const choices = answer.choices as Array<{ message?: { content?: unknown } }> | undefined;
    const content = choices?.[0]?.message?.content;
    return {
      reply: typeof content === 'string' ? content : '',
      tokensUsed: Number(result!.usage?.billableTokens ?? 0n),
      creditCharged: Number(result!.charge.creditCharged),
      balanceAfter: Number(result!.charge.balanceAfter),
    };
  });

  // Free, but a generation request: switches and the rate limit apply; the count is the model's own.
  app.post('/messages/count_tokens', { config: { messagesProtocol: true, generation: true }, bodyLimit: TEXT_BODY_LIMIT, schema: ROUTE_DOCS['messages/count_tokens'] }, async (request) => {
    const body = countTokensBody(request.body);
    const betas = anthropicBeta(request);
    const model = resolveModel(deps, request, body.model as string, 'messages/count_tokens');
    const res = await deps.text.countTokens({
      requestId: request.id,
      dialect: textV1.Dialect.MESSAGES,
      publicModel: model.id,
      routes: routesOf(model),
      body: Buffer.from(JSON.stringify(body)),
      anthropicBeta: betas,
      accountId: request.apiKey.accountId,
    });
    return { input_tokens: Number(res.inputTokens) };
  });
}
