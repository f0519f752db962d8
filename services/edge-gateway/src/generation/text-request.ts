import { catalogV1, textV1 } from '@gw/contracts';
import { create } from '@bufbuild/protobuf';
import { GatewayError } from '@gw/errors';
import {
  applyPassthroughPolicy,
  attachService,
  estimateInputTokensUpperBound,
  maxOutputTokens,
  streamFailureEvents,
  translateRequest,
  TranslateError,
  upstreamDialect,
  validateRequest,
  withoutNullFields,
  type Dialect,
} from '@gw/translate';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { SseWriter, type SseFrame } from '../http/sse.ts';
import type { ResolvedModel } from '../state/catalog-cache.ts';
import { resolveModel } from './resolve-model.ts';
import { holdFor, releaseHold, serviceObject, settleText, type Charge, type Hold } from './metering.ts';

type Json = Record<string, unknown>;
export type ClientDialect = Exclude<Dialect, 'gemini'>;

const PROTO_DIALECT: Record<ClientDialect, textV1.Dialect> = {
  chat: textV1.Dialect.CHAT,
  messages: textV1.Dialect.MESSAGES,
  responses: textV1.Dialect.RESPONSES,
};

/** A whole answer may take the provider's full text deadline; streams are bounded by their output cap. */
const GENERATE_TIMEOUT_MS = 11 * 60_000;

/**
 * Step 4 of the order of checks: the body in the client's protocol, with every problem named. The
 * body answered is the one the gateway goes on with (see `withoutNullFields`).
 */
export function validBody(dialect: Dialect, raw: unknown): Json {
  const body = withoutNullFields(dialect, raw);
  const problems = validateRequest(dialect, body);
  if (problems.length > 0) throw new GatewayError('invalid_request', `Invalid request: ${problems.join('; ')}.`);
  return body as Json;
}

/** Beta feature names, comma-separated, as the Anthropic SDK's `betas` option sends them. */
const BETA_LIST = /^[A-Za-z0-9._-]+(?: *, *[A-Za-z0-9._-]+)*$/;

/**
 * The client's `anthropic-beta` header on a messages route ('' when none): it travels with the
 * request, so that a request passing through to Anthropic keeps the beta features it names.
 */
export function anthropicBeta(request: FastifyRequest): string {
  const value = request.headers['anthropic-beta'];
  const joined = Array.isArray(value) ? value.join(',') : (value ?? '');
  if (joined === '') return '';
  if (joined.length > 1024 || !BETA_LIST.test(joined)) {
    throw new GatewayError('invalid_request', 'The anthropic-beta header must be a comma-separated list of beta feature names.');
  }
  return joined;
}

export function routesOf(model: ResolvedModel): catalogV1.Route[] {
  return model.routes.map((r) => create(catalogV1.RouteSchema, r));
}

/** Worst case for the hold (DECISIONS.md): an input bound needing no provider call + the output cap. */
function worstTokens(dialect: Dialect, body: Json, model: ResolvedModel): bigint {
  return BigInt(estimateInputTokensUpperBound(body) + (maxOutputTokens(dialect, body) ?? model.limits.maxOutputTokens));
}

export interface TextCall {
  dialect: ClientDialect;
  endpoint: string;
  body: Json;
  model: ResolvedModel;
  /** The client's `anthropic-beta` header (messages), '' when none. */
  anthropicBeta?: string;
}

const DIALECTS = new Set<string>(['chat', 'messages', 'responses', 'gemini']);

/**
 * A body that no route of its model can be sent is refused now, as step 4 (`invalid_request`),
 * not after the hold, where the text service would find it and a client short of credits would
 * hear 402 first. A reference to provider-side state is refused for every route (the pass-through
 * policy, docs/clients-passthrough.md). Otherwise only when no route takes the body as it is: it
 * is then translated once per dialect its routes speak, and refused when every one fails.
 * Routes whose provider's dialects the catalog did not say are left to the text service.
 */
export function assertTranslatable(dialect: ClientDialect, body: Json, model: ResolvedModel): void {
  try {
    applyPassthroughPolicy(dialect, { ...body });
  } catch (err) {
    if (err instanceof TranslateError) throw new GatewayError('invalid_request', err.message);
    throw err;
  }
  const targets = new Set<Dialect>();
  for (const route of model.routes) {
    const to = upstreamDialect(route.textDialects.filter((d): d is Dialect => DIALECTS.has(d)), dialect);
    if (to === undefined || to === dialect) return;
    targets.add(to);
  }
  let refusal: TranslateError | undefined;
  for (const to of targets) {
    try {
      translateRequest(dialect, to, body, { upstreamModel: '', stream: body.stream === true });
      return;
    } catch (err) {
      if (!(err instanceof TranslateError)) throw err;
      refusal ??= err;
    }
  }
  if (refusal) throw new GatewayError('invalid_request', refusal.message, refusal.details ? { details: refusal.details } : {});
}

/**
 * Steps 4 and 5 of the order of checks for a text route (body, model); 1 to 3 are the route
 * checks. The route defers its rate limit: a failure here reports 429 first when the account is
 * over its limit (see route-checks.ts).
 */
export function preflightText(deps: GatewayDeps, request: FastifyRequest, dialect: ClientDialect, endpoint: string, parse: (raw: unknown) => Json = (raw) => validBody(dialect, raw)) {
  const body = parse(request.body);
  const betas = dialect === 'messages' ? anthropicBeta(request) : '';
  const model = resolveModel(deps, request, body.model as string, endpoint);
  assertTranslatable(dialect, body, model);
  return { body, model, anthropicBeta: betas };
}

/**
 * The text pipeline after the preflight: rate limit, key state and hold in one billing call, then
 * the text service; the hold is settled to the reported usage or released on failure.
 * Returns the client-protocol body with our `service` object, or streams it.
 */
export async function runText(
  deps: GatewayDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  call: TextCall,
): Promise<{ body: Json; usage: textV1.Usage | undefined; charge: Charge } | undefined> {
  const { model } = call;
  const hold = await holdFor(deps, request, { model, endpoint: call.endpoint, worstUnits: worstTokens(call.dialect, call.body, model), text: true });
  const req = {
    requestId: hold.requestId,
    dialect: PROTO_DIALECT[call.dialect],
    publicModel: model.id,
    routes: routesOf(model),
    body: Buffer.from(JSON.stringify(call.body)),
    defaultMaxOutputTokens: model.limits.maxOutputTokens,
    anthropicBeta: call.anthropicBeta ?? '',
    // Route health counts failures by account: one account cannot close a route for the others.
    accountId: request.apiKey.accountId,
    firstByteTimeoutMs: model.limits.firstByteTimeoutMs ?? 0,
  };
  if (call.body.stream === true) {
    const stream = deps.generate.generateStream({ ...req, frameBatches: true }, { timeoutMs: GENERATE_TIMEOUT_MS });
    await streamText(deps, request, reply, call.dialect, hold, stream);
    return undefined;
  }
  let res: textV1.GenerateResponse;
  try {
    res = await deps.generate.generate(req, { timeoutMs: GENERATE_TIMEOUT_MS });
  } catch (err) {
    await releaseHold(deps.money, hold, request.log);
    throw err;
  }
  const charge = await settleText(deps, request.log, hold, res.usage);
  const answer = JSON.parse(Buffer.from(res.body).toString('utf8')) as Json;
  return { body: attachService(call.dialect, answer, serviceObject(charge)), usage: res.usage, charge };
}

type StreamItem = textV1.GenerateStreamResponse;

function publicFailure(err: unknown): { code: string; message: string } {
  if (err instanceof GatewayError) return { code: err.code, message: err.message };
  return { code: 'upstream_error', message: 'The upstream provider stream failed. Nothing was charged.' };
}

/**
 * Streams a text answer. The HTTP stream opens with the first frame, so a failure before it is an
 * ordinary HTTP error. The frame carrying the usage (and all after it) is held until the hold is
 * settled and our `service` object is added. A client that leaves is not followed: the upstream
 * stream is read to its end and its real usage billed (DECISIONS.md). A stream failing before its
 * usage is not charged and ends with the protocol's error event.
 */
async function streamText(
  deps: GatewayDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  dialect: ClientDialect,
  hold: Hold,
  items: AsyncIterable<StreamItem>,
): Promise<void> {
  const iterator = items[Symbol.asyncIterator]();
  let first: IteratorResult<StreamItem>;
  try {
    first = await iterator.next();
  } catch (err) {
    await releaseHold(deps.money, hold, request.log);
    throw err;
  }
  const sse = new SseWriter(request, reply, dialect === 'messages' ? { 'request-id': request.id } : {});
  const held: textV1.Frame[] = [];
  // The first and last frames sent: a failure event continues the stream after them.
  const sent: { first?: string; last?: string } = {};
  let end: textV1.StreamEnd | undefined;
  let failure: { code: string; message: string } | undefined;
  try {
    for (let next = first; !next.done; next = await iterator.next()) {
      const item = next.value.item;
      if (item.case === 'frame' || item.case === 'frames') {
        // Frames that came together leave in one write.
        const ready: SseFrame[] = [];
        for (const frame of item.case === 'frame' ? [item.value] : item.value.frames) {
          if (held.length > 0 || frame.usageBearing) held.push(frame);
          else ready.push({ event: frame.event, data: Buffer.from(frame.data).toString('utf8') });
        }
        if (ready.length > 0) {
          sent.first ??= ready[0]!.data;
          sent.last = ready.at(-1)!.data;
        }
        sse.send(...ready);
      } else if (item.case === 'end') end = item.value;
    }
  } catch (err) {
    failure = publicFailure(err);
    request.log.warn({ err }, 'text stream broke');
  }
  if (!failure && end?.errorCode) failure = { code: end.errorCode, message: end.errorMessage };
  if (!failure && !end) failure = publicFailure(undefined);

  // Settled (or released) as the upstream ends, whatever the client has read by now.
  if (failure) {
    request.errorCode = failure.code;
    await releaseHold(deps.money, hold, request.log);
    sse.send(...errorFrames(dialect, failure, sent));
  } else {
    try {
      const charge = await settleText(deps, request.log, hold, end?.usage);
      sse.send(
        ...held.map((frame, i) => {
          const data = Buffer.from(frame.data).toString('utf8');
          const withService = i === 0 && frame.usageBearing;
          return { event: frame.event, data: withService ? JSON.stringify(attachService(dialect, JSON.parse(data) as Json, serviceObject(charge))) : data };
        }),
      );
    } catch (err) {
      request.log.error({ err }, 'settling a finished stream failed');
      sse.send(...errorFrames(dialect, publicFailure(err), sent));
    }
  }
  await sse.flushed();
  if (sse.clientGone) request.log.info({ holdId: hold.requestId }, 'client left or stalled mid-stream; the upstream stream was read to its end and billed');
  sse.end();
}

/** A sent frame's JSON (not chat's `[DONE]`). */
const sentJson = (data: string | undefined): unknown => (data === undefined || !data.startsWith('{') ? undefined : JSON.parse(data));

/** The client protocol's own error event(s), made by the same translation package as every other event. */
function errorFrames(dialect: ClientDialect, failure: { code: string; message: string }, sent: { first?: string; last?: string }): SseFrame[] {
  const events = streamFailureEvents(dialect, failure, sentJson(sent.first), sentJson(sent.last));
  return events.map((ev) => ({ ...(ev.event ? { event: ev.event } : {}), data: typeof ev.data === 'string' ? ev.data : JSON.stringify(ev.data) }));
}
