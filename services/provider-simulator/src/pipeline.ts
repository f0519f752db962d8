import type { FastifyReply } from 'fastify';
import { clientGone, sleep } from './abort.ts';
import type { Sim } from './context.ts';
import { parseDirectives } from './directives.ts';
import { defaultMessage, sendError, sendModelNotFound } from './errors.ts';
import { type Fault, parseFault } from './faults.ts';
import type { SimModel } from './models.ts';
import type { ModelKind, Provider } from './types.ts';

/** What a request will experience once it has passed the up-front faults. */
export interface Effects {
  /** Only the faults a handler renders itself remain here: no_usage, stream_error, malformed, video_*. */
  fault?: Fault;
  forceTool: boolean;
  /** The tool a `tool=NAME` directive names. */
  toolName?: string;
  /** A `reasoning` directive: think even when the request did not ask. */
  reasoning: boolean;
  words?: number;
  chunkDelayMs: number;
  videoDelayMs?: number;
}

export interface PrepareInput {
  provider: Provider;
  modelId: string | undefined;
  /** Kinds of model this endpoint accepts. */
  kinds: readonly ModelKind[];
  /** The text directives are read from (last user message, prompt); empty for polls. */
  text: string;
  stream: boolean;
}

const KIND_NAMES: Record<ModelKind, string> = { text: 'text generation', image: 'image generation', video: 'video generation' };

/** A body that no JSON parser accepts, for the `malformed` fault. */
export const MALFORMED_JSON = '{"id": "sim-malformed", "object": "chat.completion", "choices": [{"index": 0, ';

/**
 * The common front of every generation endpoint: model lookup, kind check, then the faults that
 * happen before any output (latency, error statuses, timeout, malformed non-streamed body).
 * Returns undefined when the reply has already been handled.
 */
export async function prepare(
  sim: Sim,
  reply: FastifyReply,
  input: PrepareInput,
): Promise<{ model: SimModel; effects: Effects } | undefined> {
  const { provider, modelId } = input;
  if (modelId === undefined || modelId === '') {
    sendError(reply, provider, 400, 'you must provide a model parameter', { param: 'model' });
    return undefined;
  }
  const model = sim.state.servedModel(provider, modelId);
  if (!model) {
    sendModelNotFound(reply, provider, modelId);
    return undefined;
  }
  if (!input.kinds.includes(model.kind)) {
    const wanted = input.kinds.map((k) => KIND_NAMES[k]).join(' or ');
    sendError(reply, provider, 400, `The model \`${model.id}\` does not support ${wanted} on this endpoint.`, {
      param: 'model',
    });
    return undefined;
  }

  const directives = parseDirectives(input.text);
  const settings = sim.state.settingsFor(provider, model.id);
  let fault = directives.fault === undefined ? undefined : parseFault(directives.fault);
  if (fault === undefined && settings.fault !== undefined) {
    const rate = settings.failRate;
    const applies = rate === undefined || rate >= 1 || sim.state.sampleFailure(`${provider}/${model.id}`, rate);
    if (applies) fault = parseFault(settings.fault);
  }
  const effects: Effects = {
    fault,
    forceTool: directives.tool === true,
    toolName: directives.toolName,
    reasoning: directives.reasoning === true,
    words: directives.words,
    chunkDelayMs: directives.chunkDelayMs ?? settings.chunkDelayMs ?? 0,
    videoDelayMs: settings.videoDelayMs,
  };

  const latencyMs = directives.latencyMs ?? settings.latencyMs ?? 0;
  if (latencyMs > 0 && !(await sleep(latencyMs, clientGone(reply)))) {
    reply.hijack(); // the client left: nothing to answer
    return undefined;
  }
  if (await answeredByFault(sim, reply, provider, fault, input.stream)) return undefined;
  return { model, effects };
}

/** Applies the faults that replace the whole answer. True when the reply has been handled. */
async function answeredByFault(
  sim: Sim,
  reply: FastifyReply,
  provider: Provider,
  fault: Fault | undefined,
  stream: boolean,
): Promise<boolean> {
  if (fault === undefined) return false;
  if (fault.kind === 'status') {
    sendError(reply, provider, fault.status, defaultMessage(fault.status));
    return true;
  }
  if (fault.kind === 'timeout') {
    // Hang until the client gives up; the cap only guards against clients that never do.
    const capped = await sleep(sim.config.timeoutFaultCapMs, clientGone(reply));
    if (capped) sendError(reply, provider, 504, defaultMessage(504));
    else reply.hijack();
    return true;
  }
  if (fault.kind === 'malformed' && !stream) {
    reply.code(200).type('application/json').send(MALFORMED_JSON);
    return true;
  }
  return false;
}

/**
 * Faults for follow-up calls that carry no prompt (video polls and downloads): the model's settings
 * only, limited to latency, error statuses and timeout. True when the reply has been handled.
 */
export async function settingsFaultsHandled(
  sim: Sim,
  reply: FastifyReply,
  provider: Provider,
  modelId: string,
): Promise<boolean> {
  const settings = sim.state.settingsFor(provider, modelId);
  if (settings.latencyMs !== undefined && settings.latencyMs > 0 && !(await sleep(settings.latencyMs, clientGone(reply)))) {
    reply.hijack();
    return true;
  }
  const fault = settings.fault === undefined ? undefined : parseFault(settings.fault);
  if (fault?.kind !== 'status' && fault?.kind !== 'timeout') return false;
  const rate = settings.failRate;
  if (rate !== undefined && rate < 1 && !sim.state.sampleFailure(`${provider}/${modelId}`, rate)) return false;
  return answeredByFault(sim, reply, provider, fault, false);
}

/** A listing endpoint under a `listing_fault` setting answers that status. True when handled. */
export function listingFaultHandled(sim: Sim, reply: FastifyReply, provider: Provider): boolean {
  const status = sim.state.listingFault(provider);
  if (status === undefined) return false;
  sendError(reply, provider, status, defaultMessage(status));
  return true;
}
