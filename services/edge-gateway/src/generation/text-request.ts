import { catalogV1, textV1 } from '@gw/contracts';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { GatewayError } from '@gw/errors';
import {
  applyPassthroughPolicy,
  estimateInputTokensUpperBound,
  maxOutputTokens,
  prepareRequest,
  streamFailureEvents,
  TranslateError,
  upstreamDialect,
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

const PROTO_DIALECT: Record<Dialect, textV1.Dialect> = {
  chat: textV1.Dialect.CHAT,
  messages: textV1.Dialect.MESSAGES,
  responses: textV1.Dialect.RESPONSES,
  gemini: textV1.Dialect.GEMINI,
};

/** A whole answer may take the provider's full text deadline; streams are bounded by their output cap. */
const GENERATE_TIMEOUT_MS = 11 * 60_000;

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
  /** The request translated for the model's routes (`translateForRoutes`). */
  translated: Translated;
  /** The client's `anthropic-beta` header (messages), '' when none. */
  anthropicBeta?: string;
}

const DIALECTS = new Set<string>(['chat', 'messages', 'responses', 'gemini']);

/** A request translated once for every upstream dialect its model's routes speak. */
export interface Translated {
  /** One body per dialect (per upstream model for Gemini), as `GenerateRequest.upstream` carries them. */
  upstream: Array<MessageInitShape<typeof textV1.UpstreamBodySchema>>;
  /** The client's tools not sent to the model's providers (docs/hosted-tools.md): any route's. */
  removedTools: string[];
  /** The text service needs the client's body too (see `GenerateRequest.body`). */
  needsClientBody: boolean;
}

/**
 * Step 4's last part: the body translated once for every dialect the model's routes speak (the
 * same for a streamed and a complete answer: `stream` is the provider adapter's), which the text
 * service sends as it is. A reference to provider-side state is refused for every route (the
 * pass-through policy, docs/clients-passthrough.md). A body no route of its model can be sent is
 * refused now (`invalid_request`), not after the hold, where the text service would find it and a
 * client short of credits would hear 402 first: when no route takes the body as it is and every
 * translation fails. Gemini's translation depends on the upstream model (thought signatures), so
 * it is made per model; every other dialect's serves each of its routes (the text service sets
 * the route's model).
 *
 * Fallback, where the text service translates for itself from the client's body (sent then): a
 * route whose provider's dialects the catalog did not state, and a dialect whose translation
 * failed while another route's succeeded (the text service refuses that route as this would).
 * The responses protocol's answers echo the request's settings: its body is always sent.
 */
export function translateForRoutes(dialect: ClientDialect, body: Json, model: ResolvedModel): Translated {
  try {
    applyPassthroughPolicy(dialect, { ...body });
  } catch (err) {
    if (err instanceof TranslateError) throw new GatewayError('invalid_request', err.message);
    throw err;
  }
  const targets = new Map<string, { to: Dialect; upstreamModel: string; perModel: boolean }>();
  let undescribed = false;
  for (const route of model.routes) {
    const to = upstreamDialect(route.textDialects.filter((d): d is Dialect => DIALECTS.has(d)), dialect);
    if (to === undefined) {
      undescribed = true;
      continue;
    }
    const perModel = to === 'gemini';
    const key = perModel ? `${to} ${route.upstreamModel}` : to;
    if (!targets.has(key)) targets.set(key, { to, upstreamModel: route.upstreamModel, perModel });
  }
  const cap = model.limits.maxOutputTokens;
  const upstream: Translated['upstream'] = [];
  const removed = new Set<string>();
  let refusal: TranslateError | undefined;
  for (const { to, upstreamModel, perModel } of targets.values()) {
    try {
      const out = prepareRequest(dialect, to, body, { upstreamModel, ...(cap > 0 ? { defaultMaxOutputTokens: cap } : {}) });
      upstream.push({ dialect: PROTO_DIALECT[to], upstreamModel: perModel ? upstreamModel : '', body: Buffer.from(JSON.stringify(out.body)) });
      for (const tool of out.removedTools) removed.add(tool);
    } catch (err) {
      if (!(err instanceof TranslateError)) throw err;
      refusal ??= err;
    }
  }
  if (refusal && upstream.length === 0 && !undescribed) {
    throw new GatewayError('invalid_request', refusal.message, refusal.details ? { details: refusal.details } : {});
  }
  return { upstream, removedTools: [...removed], needsClientBody: undescribed || refusal !== undefined || dialect === 'responses' };
}

/**
 * Step 5 of the order of checks for a text route (the model), its body valid (step 4, the route's
 * schema); 1 to 3 are the route checks. The route defers its rate limit: a failure here reports
 * 429 first when the account is over its limit (see route-checks.ts).
 */
export function preflightText(deps: GatewayDeps, request: FastifyRequest, body: Json & { model: string }, dialect: ClientDialect, endpoint: string) {
  const betas = dialect === 'messages' ? anthropicBeta(request) : '';
  const model = resolveModel(deps, request, body.model, endpoint);
  return { body, model, anthropicBeta: betas, translated: translateForRoutes(dialect, body, model) };
}

/**
 * `data` with the serialised `service` object spliced in at byte `at`, where the text service left
 * its slot (never 0: a slot follows at least `{"service":`); without a slot, `data` as it is.
 */
function withService(data: Uint8Array, at: number, service: Buffer): Buffer {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return at > 0 ? Buffer.concat([bytes.subarray(0, at), service, bytes.subarray(at)]) : bytes;
}

const serviceJson = (charge: Charge) => Buffer.from(JSON.stringify(serviceObject(charge)));

/**
 * The text pipeline after the preflight: rate limit, key state and hold in one billing call, then
 * the text service; the hold is settled to the reported usage or released on failure.
 * Returns the client-protocol body with our `service` object (JSON text, never parsed here), or
 * streams it.
 */
export async function runText(
  deps: GatewayDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  call: TextCall,
): Promise<{ body: Buffer; usage: textV1.Usage | undefined; charge: Charge } | undefined> {
  const { model } = call;
  const hold = await holdFor(deps, request, { model, endpoint: call.endpoint, worstUnits: worstTokens(call.dialect, call.body, model), text: true });
  const req = {
    requestId: hold.requestId,
    dialect: PROTO_DIALECT[call.dialect],
    publicModel: model.id,
    routes: routesOf(model),
    upstream: call.translated.upstream,
    body: call.translated.needsClientBody ? Buffer.from(JSON.stringify(call.body)) : Buffer.alloc(0),
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
  return { body: withService(res.body, res.serviceAt, serviceJson(charge)), usage: res.usage, charge };
}

type StreamItem = textV1.GenerateStreamResponse;

function publicFailure(err: unknown): { code: string; message: string } {
  if (err instanceof GatewayError) return { code: err.code, message: err.message };
  return { code: 'upstream_error', message: 'The upstream provider stream failed. Nothing was charged.' };
}

/**
 * Streams a text answer. The HTTP stream opens with the first frame, so a failure before it is an
 * ordinary HTTP error. The frame carrying the usage (and all after it) is held until the hold is
 * settled and our `service` object is added. The settle starts as soon as the usage is final:
 * with that frame when it brings the usage (OpenAI's usage chunk, before `[DONE]`), else at the
 * stream's end. A client that leaves is not followed: the upstream stream is read to its end and
 * its real usage billed (DECISIONS.md). A stream failing before its usage is not charged and ends
 * with the protocol's error event; one failing after its final usage came is a complete answer,
 * charged and sent as one.
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
  let end: textV1.StreamEnd | undefined;
  let failure: { code: string; message: string } | undefined;
  /** The settle on a usage that came final with its frame, started while the stream goes on. */
  let settling: Promise<Charge> | undefined;
  try {
    for (let next = first; !next.done; next = await iterator.next()) {
      const item = next.value.item;
      if (item.case === 'frame' || item.case === 'frames') {
        // Frames that came together leave in one write.
        const ready: SseFrame[] = [];
        for (const frame of item.case === 'frame' ? [item.value] : item.value.frames) {
          if (held.length > 0 || frame.usageBearing) held.push(frame);
          else ready.push({ event: frame.event, data: Buffer.from(frame.data).toString('utf8') });
          if (frame.usageBearing && frame.usage && !settling) {
            settling = settleText(deps, request.log, hold, frame.usage);
            settling.catch(() => undefined); // awaited below; its failure is handled there
          }
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
  if (failure && settling) {
    // The final usage came before the failure: the answer is whole and is charged as such.
    request.log.warn({ failure }, 'the text stream failed after its final usage; the answer is complete and charged');
    failure = undefined;
  }

  // Settled (or released) as the upstream ends, whatever the client has read by now. The error
  // events come ready from the text service, whose translator knows what the client was sent.
  if (failure) {
    request.errorCode = failure.code;
    await releaseHold(deps.money, hold, request.log);
    sse.send(...errorFrames(dialect, failure, end));
  } else {
    try {
      const charge = await (settling ?? settleText(deps, request.log, hold, end?.usage));
      sse.send(
        ...held.map((frame, i) => {
          const data = i === 0 && frame.usageBearing ? withService(frame.data, frame.serviceAt, serviceJson(charge)) : frame.data;
          return { event: frame.event, data: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8') };
        }),
      );
    } catch (err) {
      request.log.error({ err }, 'settling a finished stream failed');
      sse.send(...errorFrames(dialect, publicFailure(err), end));
    }
  }
  await sse.flushed();
  if (sse.clientGone) request.log.info({ holdId: hold.requestId }, 'client left or stalled mid-stream; the upstream stream was read to its end and billed');
  sse.end();
}

/**
 * The client protocol's error event(s): as the text service made them (`StreamEnd.failure_frames`),
 * or, where no end came (the exchange broke with the text service that held the stream's state),
 * the protocol's plain error event (a responses stream's numbering starts again there).
 */
function errorFrames(dialect: ClientDialect, failure: { code: string; message: string }, end: textV1.StreamEnd | undefined): SseFrame[] {
  if (end && end.failureFrames.length > 0) return end.failureFrames.map((f) => ({ ...(f.event ? { event: f.event } : {}), data: Buffer.from(f.data).toString('utf8') }));
  return streamFailureEvents(dialect, failure).map((ev) => ({ ...(ev.event ? { event: ev.event } : {}), data: typeof ev.data === 'string' ? ev.data : JSON.stringify(ev.data) }));
}
