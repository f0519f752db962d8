import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { textV1, type catalogV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { isProviderError, ProviderError, textAnswerFromStream, textAnswerWhole, type FallbackRouter, type ProviderAdapter, type ProviderRegistry, type SseEvent, type TextDialect, type TokenUsage } from '@gw/providers';
import { createStreamTranslator, extractUsage, serviceSlot, translateRequest, translateResponse, TranslateError, type ResponseContext, type Usage } from '@gw/translate';
import { clientDialect, providerDialect, responseId } from './dialects.ts';
import { readyTogether } from './ready-together.ts';

export interface TextDeps {
  providers: ProviderRegistry;
  router: FallbackRouter;
  now: () => number;
  /** An answer's first-event deadline per route (streamed or complete) when the request names none (ms). */
  firstByteTimeoutMs: number;
}

type Json = Record<string, unknown>;

interface Prepared {
  client: TextDialect;
  /** The client's body, where the gateway sent it (see `GenerateRequest.body`). */
  body: Json | undefined;
  ctx: ResponseContext;
}

function jsonObject(bytes: Uint8Array): Json {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw new GatewayError('invalid_request', 'The request body is not valid JSON.');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  return body as Json;
}

function prepare(req: { requestId: string; dialect: textV1.Dialect; publicModel: string; body: Uint8Array }, now: number): Prepared {
  const client = clientDialect(req.dialect);
  const body = req.body.length > 0 ? jsonObject(req.body) : undefined;
  const ctx = { model: req.publicModel, id: responseId(client, req.requestId), created: Math.floor(now / 1000), ...(body ? { request: body } : {}) };
  return { client, body, ctx };
}

function clientBody(prepared: Prepared): Json {
  if (!prepared.body) throw new GatewayError('invalid_request', 'The request carries no body.');
  return prepared.body;
}

function adapterFor(deps: TextDeps, route: catalogV1.Route): ProviderAdapter {
  const adapter = deps.providers.get(route.provider);
  // A route to a provider this deployment has no credentials for is a configuration fault.
  if (!adapter) throw new GatewayError('upstream_error', `Provider ${route.provider} is not configured.`);
  return adapter;
}

/** Translation failures are the request's fault (a shape the target protocol cannot carry). */
function translated<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof TranslateError) throw new GatewayError('invalid_request', err.message, err.details ? { details: err.details } : {});
    throw err;
  }
}

/**
 * The client's body translated here for one route's provider. Adapters take the upstream model in
 * the body even where the wire carries it in the URL (Gemini), so it is always set here.
 */
function upstreamBody(client: TextDialect, dialect: TextDialect, body: Json, route: catalogV1.Route, defaultCap: number): Json {
  const opts = { upstreamModel: route.upstreamModel, ...(defaultCap > 0 ? { defaultMaxOutputTokens: defaultCap } : {}) };
  const out = translated(() => translateRequest(client, dialect, body, opts));
  return { ...out, model: route.upstreamModel };
}

const PROTO_DIALECTS: Record<TextDialect, textV1.Dialect> = {
  chat: textV1.Dialect.CHAT,
  messages: textV1.Dialect.MESSAGES,
  responses: textV1.Dialect.RESPONSES,
  gemini: textV1.Dialect.GEMINI,
};

/** The body for a route's provider speaking a dialect. */
type UpstreamBodies = (dialect: TextDialect, route: catalogV1.Route) => Json;

/**
 * The gateway translated the request once, for every dialect its routes speak (pass-through policy
 * included): a route's body is that translation as it is, but for the route's model; the provider
 * adapter adds what its call needs (`stream`, chat's usage option). Each translation is read once
 * per request, whatever the fallback tries. Fallback: a route the gateway sent no translation for
 * is translated here from the client's body, which the gateway then sends too: its provider's
 * dialects were not in the gateway's catalog, or the gateway could not translate to them (the
 * same translation here then refuses the request as before).
 */
function upstreamBodies(req: { upstream: textV1.UpstreamBody[]; defaultMaxOutputTokens: number }, prepared: Prepared): UpstreamBodies {
  const read = new Map<textV1.UpstreamBody, Json>();
  return (dialect, route) => {
    const wanted = PROTO_DIALECTS[dialect];
    const sent = req.upstream.find((u) => u.dialect === wanted && (u.upstreamModel === '' || u.upstreamModel === route.upstreamModel));
    if (!sent) {
      if (!prepared.body) throw new GatewayError('upstream_error', `The gateway sent no request in ${dialect}, the protocol of provider ${route.provider}.`);
      return upstreamBody(prepared.client, dialect, prepared.body, route, req.defaultMaxOutputTokens);
    }
    let body = read.get(sent);
    if (!body) read.set(sent, (body = jsonObject(sent.body)));
    return { ...body, model: route.upstreamModel };
  };
}

/**
 * The client's headers of the provider's own protocol, for a request that passes through to it
 * unchanged: Anthropic's `anthropic-beta` turns on the beta features the body then uses. Across
 * dialects they mean nothing to the provider and are not sent.
 */
function nativeHeaders(client: TextDialect, upstream: TextDialect, req: { anthropicBeta: string }): { nativeHeaders?: Record<string, string> } {
  return client === 'messages' && upstream === 'messages' && req.anthropicBeta !== '' ? { nativeHeaders: { 'anthropic-beta': req.anthropicBeta } } : {};
}

function tokens(u: Usage | undefined): TokenUsage | undefined {
  return u && { inputTokens: u.inputTokens, outputTokens: u.outputTokens };
}

export function toUsageProto(u: Usage | undefined): textV1.Usage | undefined {
  if (!u) return undefined;
  return create(textV1.UsageSchema, {
    inputTokens: BigInt(u.inputTokens),
    outputTokens: BigInt(u.outputTokens),
    cacheCreationTokens: BigInt(u.cacheCreationTokens),
    cacheReadTokens: BigInt(u.cacheReadTokens),
    billableTokens: BigInt(u.totalBillable),
  });
}

/** One complete answer, from the first route that serves it. */
export async function generate(deps: TextDeps, req: textV1.GenerateRequest, signal: AbortSignal): Promise<textV1.GenerateResponse> {
  const prepared = prepare(req, deps.now());
  const { client, ctx } = prepared;
  const bodies = upstreamBodies(req, prepared);
  const { dialect, answer, provider } = await deps.router.withFallback(
    req.routes,
    async (route, { last }) => {
      const adapter = adapterFor(deps, route);
      const upstreamDialect = providerDialect(adapter, client);
      const upstream = bodies(upstreamDialect, route);
      const opts = { signal, requestId: req.requestId, usage: (b?: Record<string, unknown>) => tokens(b && extractUsage(upstreamDialect, b)), ...nativeHeaders(client, upstreamDialect, req) };
      // A route with another after it is asked for a stream, so that the first-byte deadline can
      // move a silent provider's complete answer to the next route; the provider's complete answer
      // is rebuilt from it (docs/routing.md). The last route has nowhere to move to: it is asked
      // for the complete answer, which is cheaper to read and never waits between frames.
      const whole = last
        ? await textAnswerWhole(adapter, upstreamDialect, upstream, opts)
        : await textAnswerFromStream(adapter, upstreamDialect, upstream, { ...opts, timeoutMs: req.firstByteTimeoutMs > 0 ? req.firstByteTimeoutMs : deps.firstByteTimeoutMs });
      // A responses-API answer can be a 200 whose status says the generation failed.
      if (upstreamDialect === 'responses' && whole.status === 'failed') {
        throw new ProviderError('upstream_error', 'The upstream provider failed to generate a response.', { provider: adapter.name, retryable: true });
      }
      return { dialect: upstreamDialect, answer: whole, provider: adapter.name };
    },
    { signal, account: req.accountId },
  );
  const out = serviceSlot(client, translated(() => translateResponse(dialect, client, answer, ctx)));
  return create(textV1.GenerateResponseSchema, {
    body: Buffer.from(out.json),
    serviceAt: byteOffset(out),
    usage: toUsageProto(extractUsage(dialect, answer)),
    provider,
  });
}

type TranslatedEvent = SseEvent & { carriesUsage?: true };

/** Where the `service` object goes, in bytes (the wire's unit) rather than UTF-16 units. */
function byteOffset(slot: { json: string; at: number }): number {
  return Buffer.byteLength(slot.json.slice(0, slot.at));
}

/**
 * One event as a frame. The usage-bearing one is serialised with a slot for the gateway's
 * `service` object, so the gateway adds it after settling without parsing the frame; it carries
 * the final usage when that is known already (`usage`), so the gateway can settle before the
 * provider's stream has closed.
 */
function frameOf(client: TextDialect, event: TranslatedEvent, usage?: textV1.Usage): MessageInitShape<typeof textV1.FrameSchema> {
  if (event.carriesUsage === true && typeof event.data === 'object' && event.data !== null) {
    const slot = serviceSlot(client, event.data as Json);
    return { event: event.event ?? '', data: Buffer.from(slot.json), usageBearing: true, serviceAt: byteOffset(slot), ...(usage ? { usage } : {}) };
  }
  const data = typeof event.data === 'string' ? event.data : (event.text ?? JSON.stringify(event.data));
  return { event: event.event ?? '', data: Buffer.from(data), usageBearing: event.carriesUsage === true };
}

/**
 * Translated events as stream items: one message for all of them when the caller takes batches,
 * else one each. `usage`: the stream's final usage, where the translator has it already.
 */
function framed(client: TextDialect, events: TranslatedEvent[], batches: boolean, usage?: Usage): textV1.GenerateStreamResponse[] {
  const final = events.some((e) => e.carriesUsage === true) ? toUsageProto(usage) : undefined;
  if (batches && events.length > 1) {
    return [create(textV1.GenerateStreamResponseSchema, { item: { case: 'frames', value: { frames: events.map((e) => frameOf(client, e, final)) } } })];
  }
  return events.map((event) => create(textV1.GenerateStreamResponseSchema, { item: { case: 'frame', value: frameOf(client, event, final) } }));
}

function end(
  client: TextDialect,
  init: { usage?: Usage; errorCode?: string; errorMessage?: string; provider: string; failureEvents: TranslatedEvent[] },
): textV1.GenerateStreamResponse {
  return create(textV1.GenerateStreamResponseSchema, {
    item: {
      case: 'end',
      value: {
        usage: toUsageProto(init.usage),
        errorCode: init.errorCode ?? '',
        errorMessage: init.errorMessage ?? '',
        provider: init.provider,
        failureFrames: init.failureEvents.map((e) => frameOf(client, e)),
      },
    },
  });
}

/** What the gateway tells a client whose finished stream it could not settle (see `StreamEnd.failure_frames`). */
const UNSETTLED = { code: 'upstream_error', message: 'Billing did not confirm the charge of this request, so it is not charged: its hold is given back.' };

/**
 * A streamed answer. The first route whose first event arrives wins (a failure before that, or no
 * event within the first-byte deadline, falls back; when every route fails it reaches the gateway
 * as an error before any frame, so the client gets an HTTP error).
 * After that, upstream events are translated into the client's protocol; a failure mid-stream
 * ends the stream with its error code (the gateway renders the protocol's error event and
 * charges nothing when no usage came).
 */
export async function* generateStream(deps: TextDeps, req: textV1.GenerateStreamRequest, signal: AbortSignal): AsyncGenerator<textV1.GenerateStreamResponse> {
  const prepared = prepare(req, deps.now());
  const { client, ctx } = prepared;
  const bodies = upstreamBodies(req, prepared);
  // The stream's usage is known once the translator has read it; telemetry asks at the stream's end.
  let streamUsage: (() => Usage | undefined) | undefined;
  const started = await deps.router.withFallback(
    req.routes,
    async (route) => {
      const adapter = adapterFor(deps, route);
      const dialect = providerDialect(adapter, client);
      const upstream = bodies(dialect, route);
      const inputCount = countAlongside(adapter, client, dialect, upstream, req, signal);
      // The first-byte deadline: a route that has sent no event by then is left for the next,
      // nothing having reached the client.
      const res = await adapter.text(dialect, upstream, {
        stream: true,
        signal,
        requestId: req.requestId,
        timeoutMs: req.firstByteTimeoutMs > 0 ? req.firstByteTimeoutMs : deps.firstByteTimeoutMs,
        usage: () => tokens(streamUsage?.()),
        ...nativeHeaders(client, dialect, req),
      });
      if (res.kind !== 'stream') throw new GatewayError('upstream_error', 'The provider did not stream.');
      return { route, dialect, events: res.events, provider: adapter.name, inputCount };
    },
    { signal, account: req.accountId },
  );
  // The first upstream event is in: the stream opens once the count is too (see countAlongside).
  const inputTokens = started.inputCount && (await atMost(started.inputCount, COUNT_WAIT_MS));
  const translator = createStreamTranslator(started.dialect, client, inputTokens === undefined ? ctx : { ...ctx, inputTokens });
  streamUsage = () => translator.usage();
  try {
    // Each event is translated as it is read (so the provider call's telemetry, taken when the
    // upstream ends, sees all of it); frames that are ready together leave together: under load,
    // one message instead of one per token.
    for await (const groups of readyTogether(started.events, (event) => translator.push(event))) {
      yield* framed(client, groups.flat(), req.frameBatches, translator.usage());
    }
    const last = translator.end();
    const usage = translator.usage();
    yield* framed(client, last, req.frameBatches, usage);
    yield end(client, { ...(usage ? { usage } : {}), provider: started.provider, failureEvents: translator.fail(UNSETTLED) });
  } catch (err) {
    if (signal.aborted) throw err;
    if (isProviderError(err)) deps.router.recordFailure(started.route, req.accountId, err);
    const code = err instanceof GatewayError ? err.code : 'upstream_error';
    const message = err instanceof GatewayError ? err.message : 'The upstream provider stream failed.';
    // Rendered here, by the translator that knows what the client was sent.
    yield end(client, { errorCode: code, errorMessage: message, provider: started.provider, failureEvents: translator.fail({ code, message }) });
  }
}

/** How long a stream's opening waits for the provider's token counter once its first event is in. */
const COUNT_WAIT_MS = 2_000;

/**
 * The messages protocol reports the input tokens up front, in `message_start`; a provider of
 * another dialect reports them only at its end. Where that provider has a token counter (free),
 * it is asked at the same time as the generation, and the stream opens once both the count and
 * the first upstream event are in, so that `message_start` carries the provider's own count
 * (never an estimate). A counter that fails, or is not done `COUNT_WAIT_MS` after the first event,
 * leaves it at 0: the real count still comes in `message_delta`. Undefined when there is nothing
 * to ask (a messages provider reports the count in its own `message_start`).
 */
function countAlongside(
  adapter: ProviderAdapter,
  client: TextDialect,
  dialect: TextDialect,
  upstream: Json,
  req: textV1.GenerateStreamRequest,
  signal: AbortSignal,
): Promise<number | undefined> | undefined {
  if (client !== 'messages' || dialect === 'messages' || !adapter.countTokens) return undefined;
  // The generation's own body: each counter sends on only the fields it counts.
  return adapter.countTokens(dialect, upstream, { signal, requestId: req.requestId, ...nativeHeaders(client, dialect, req) }).catch(() => undefined);
}

/** `promise`'s value, or undefined when it takes longer than `ms`. */
async function atMost<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Input tokens from the provider's own counter. */
export async function countTokens(deps: TextDeps, req: textV1.CountTokensRequest, signal: AbortSignal): Promise<number> {
  const prepared = prepare(req, deps.now());
  const { client } = prepared;
  const body = clientBody(prepared);
  return deps.router.withFallback(
    req.routes,
    async (route) => {
      const adapter = adapterFor(deps, route);
      if (!adapter.countTokens) {
        throw new GatewayError('capability_not_supported', `The model ${req.publicModel} has no token counter.`);
      }
      const dialect = providerDialect(adapter, client);
      const upstream = upstreamBody(client, dialect, body, route, 0);
      return adapter.countTokens(dialect, upstream, { signal, requestId: req.requestId, ...nativeHeaders(client, dialect, req) });
    },
    { signal, account: req.accountId },
  );
}
