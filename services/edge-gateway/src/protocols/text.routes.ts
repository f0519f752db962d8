import { textV1 } from '@gw/contracts';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { GatewayDeps } from '../deps.ts';
import { ROUTE_DOCS } from '../openapi/schemas.ts';
import { resolveModel } from '../generation/resolve-model.ts';
import { anthropicBeta, preflightText, routesOf, runText, type ClientDialect } from '../generation/text-request.ts';
import { REMOVED_TOOLS_HEADER } from '@gw/translate';
import { headerList } from '../http/quote.ts';

/** The three imitated text protocols: same pipeline, each in its own dialect. */
const PROTOCOLS: Array<{ path: 'chat/completions' | 'messages' | 'responses'; dialect: ClientDialect }> = [
  { path: 'chat/completions', dialect: 'chat' },
  { path: 'messages', dialect: 'messages' },
  { path: 'responses', dialect: 'responses' },
];

/** The content type Fastify gives a JSON answer it serialises itself. */
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Largest text request body: the messages API's own request limit (32 MB), room for long contexts
 * and base64 images in content. The internal call that carries it allows a little more
 * (`MAX_MESSAGE_BYTES` in service-kit).
 */
export const TEXT_BODY_LIMIT = 32 * 1024 * 1024;

/** Text generation (spec 4.2 to 4.6). Generation requests: operator switches apply (step 3). */
export async function textRoutes(untyped: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const app = untyped.withTypeProvider<ZodTypeProvider>();
  for (const { path, dialect } of PROTOCOLS) {
    const config = { deferRateLimit: true, messagesProtocol: dialect === 'messages', generation: true };
    app.post(`/${path}`, { config, bodyLimit: TEXT_BODY_LIMIT, schema: ROUTE_DOCS[path] }, async (request, reply) => {
      const { body, model, anthropicBeta: betas, translated } = preflightText(deps, request, request.body, dialect, path);
      const removed = translated.removedTools;
      // On the raw response, so that a stream's head (written there) carries it too.
      if (removed.length > 0) reply.raw.setHeader(REMOVED_TOOLS_HEADER, headerList(removed));
      const result = await runText(deps, request, reply, { dialect, endpoint: path, body, model, translated, anthropicBeta: betas });
      // The answer is JSON text already, `service` included: sent as it is.
      return result ? reply.type(JSON_TYPE).send(result.body) : reply;
    });
  }

  app.post('/chat', { config: { deferRateLimit: true, generation: true }, bodyLimit: TEXT_BODY_LIMIT, schema: ROUTE_DOCS.chat }, async (request, reply) => {
    const { body, model, translated } = preflightText(deps, request, request.body, 'chat', 'chat');
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
    const body = request.body;
    const betas = anthropicBeta(request);
    const model = resolveModel(deps, request, body.model, 'messages/count_tokens');
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
