import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Sim } from '../context.ts';
import { type Conversation, planReply, type Plan, splitDeltas, type ToolChoice, toolResultText } from '../engine.ts';
import { sendError } from '../errors.ts';
import { newId } from '../ids.ts';
import { asArray, asInteger, asObject, asString, isObject } from '../json.ts';
import { type Effects, prepare } from '../pipeline.ts';
import { SseStream } from '../sse.ts';
import { unixNow } from '../clock.ts';
import { MALFORMED_EVENT_DATA, STREAM_ERROR_MESSAGE, streamCut } from '../stream-faults.ts';
import { countTokens } from '../tokens.ts';
import { thinks } from './responses.ts';
import type { JsonObject, Provider } from '../types.ts';

/** Text of a chat message's content: a string or an array of parts, of which only text parts count. */
export function chatContentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return asArray(content)
    .map((part) => (isObject(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .filter((t) => t !== '')
    .join('\n');
}

function chatToolChoice(value: unknown): ToolChoice {
  if (value === 'none') return { mode: 'none' };
  if (value === 'required') return { mode: 'required' };
  if (isObject(value) && isObject(value.function) && typeof value.function.name === 'string') {
    return { mode: 'required', name: value.function.name };
  }
  return { mode: 'auto' };
}

export function chatConversation(body: JsonObject): Conversation {
  const messages = asArray(body.messages).map(asObject);
  const last = messages.at(-1);
  const lastUser = messages.findLast((m) => m.role === 'user');
  const tools = asArray(body.tools).flatMap((t) => {
    const fn = asObject(asObject(t).function);
    return typeof fn.name === 'string' ? [{ name: fn.name, schema: fn.parameters }] : [];
  });
  const format = asObject(body.response_format);
  return {
    lastUserText: lastUser ? chatContentText(lastUser.content) : '',
    toolResult: last && (last.role === 'tool' || last.role === 'function') ? toolResultText(last.content) : undefined,
    tools,
    toolChoice: chatToolChoice(body.tool_choice),
    format:
      format.type === 'json_schema'
        ? { kind: 'json_schema', schema: asObject(format.json_schema).schema }
        : format.type === 'json_object'
          ? { kind: 'json_object' }
          : undefined,
    reasoning: thinks(body.reasoning_effort),
  };
}

interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [detail: string]: unknown;
}

function chatUsage(provider: Provider, promptTokens: number, completionTokens: number, reasoningTokens = 0): ChatUsage {
  const usage: ChatUsage = {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
  if (provider === 'openai') {
    usage.prompt_tokens_details = { cached_tokens: 0, audio_tokens: 0 };
    usage.completion_tokens_details = {
      reasoning_tokens: reasoningTokens,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    };
  }
  return usage;
}

const FINISH: Record<'stop' | 'length', string> = { stop: 'stop', length: 'length' };

/** POST {base}/chat/completions, for OpenAI and the OpenAI-compatible provider. */
export function registerChatCompletions(app: FastifyInstance, sim: Sim, provider: Provider): void {
  app.post('/chat/completions', async (request, reply) => {
    const body = asObject(request.body);
    if (asArray(body.messages).length === 0) {
      return sendError(reply, provider, 400, "Invalid 'messages': expected a non-empty array.", { param: 'messages' });
    }
    const maxTokensField = body.max_completion_tokens ?? body.max_tokens;
    const maxTokens = maxTokensField === undefined || maxTokensField === null ? undefined : asInteger(maxTokensField);
    if (maxTokens !== undefined && maxTokens < 1) {
      return sendError(reply, provider, 400, "Invalid 'max_tokens': must be at least 1.", { param: 'max_tokens' });
    }
    if (maxTokensField !== undefined && maxTokensField !== null && maxTokens === undefined) {
      return sendError(reply, provider, 400, "Invalid 'max_tokens': expected an integer.", { param: 'max_tokens' });
    }
    const conv = chatConversation(body);
    const stream = body.stream === true;
    const ready = await prepare(sim, reply, {
      provider,
      modelId: asString(body.model),
      kinds: ['text'],
      text: conv.lastUserText,
      stream,
    });
    if (!ready) return reply;

    const plan = planReply(conv, ready.effects, maxTokens);
    const usage = chatUsage(provider, countTokens({ messages: body.messages, tools: body.tools }), plan.outputTokens, plan.reasoning?.tokens);
    const withUsage = ready.effects.fault?.kind !== 'no_usage';
    const ids = { id: newId('chatcmpl-sim'), created: unixNow(), model: ready.model.id, callId: newId('call_sim') };
    if (!stream) return reply.send(completion(provider, ids, plan, withUsage ? usage : undefined));

    const includeUsage = asObject(body.stream_options).include_usage === true;
    await streamCompletion(reply, provider, ids, plan, ready.effects, includeUsage && withUsage ? usage : undefined);
    return reply;
  });
}

interface CompletionIds {
  id: string;
  created: number;
  model: string;
  callId: string;
}

function envelope(provider: Provider, ids: CompletionIds, object: string): JsonObject {
  const base: JsonObject = { id: ids.id, object, created: ids.created, model: ids.model };
  if (provider === 'openai') {
    base.service_tier = 'default';
    base.system_fingerprint = 'fp_sim';
  }
  return base;
}

function completion(provider: Provider, ids: CompletionIds, plan: Plan, usage: ChatUsage | undefined): JsonObject {
  const message: JsonObject =
    plan.kind === 'tool'
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: ids.callId, type: 'function', function: { name: plan.name, arguments: plan.argsJson } }],
          refusal: null,
          annotations: [],
        }
      : { role: 'assistant', content: plan.text, refusal: null, annotations: [] };
  const out: JsonObject = {
    ...envelope(provider, ids, 'chat.completion'),
    choices: [
      { index: 0, message, logprobs: null, finish_reason: plan.kind === 'tool' ? 'tool_calls' : FINISH[plan.finish] },
    ],
  };
  if (usage) out.usage = usage;
  return out;
}

/**
 * `data: {chunk}` events: a role delta, content (or tool-argument) deltas, the finish chunk, the usage
 * chunk with empty `choices` when asked for, then `data: [DONE]`.
 */
async function streamCompletion(
  reply: FastifyReply,
  provider: Provider,
  ids: CompletionIds,
  plan: Plan,
  effects: Effects,
  usage: ChatUsage | undefined,
): Promise<void> {
  const sse = new SseStream(reply, { delayMs: effects.chunkDelayMs });
  const base = envelope(provider, ids, 'chat.completion.chunk');
  // With include_usage, real chunks carry `usage: null` until the final usage chunk.
  const chunk = (delta: JsonObject, finish: string | null): JsonObject => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(usage ? { usage: null } : {}),
  });

  const first: JsonObject =
    plan.kind === 'tool'
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [{ index: 0, id: ids.callId, type: 'function', function: { name: plan.name, arguments: '' } }],
          refusal: null,
        }
      : { role: 'assistant', content: '', refusal: null };
  if (!(await sse.event(undefined, chunk(first, null)))) return sse.end();

  const deltas = splitDeltas(plan.kind === 'tool' ? plan.argsJson : plan.text);
  const cut = streamCut(effects.fault, deltas.length);
  for (let i = 0; i <= deltas.length; i++) {
    if (cut?.at === i) {
      if (cut.kind === 'malformed') await sse.event(undefined, MALFORMED_EVENT_DATA);
      else {
        await sse.event(undefined, { error: { message: STREAM_ERROR_MESSAGE, type: 'server_error', param: null, code: null } });
      }
      return sse.end();
    }
    if (i === deltas.length) break;
    const piece = deltas[i]!;
    const delta = plan.kind === 'tool' ? { tool_calls: [{ index: 0, function: { arguments: piece } }] } : { content: piece };
    if (!(await sse.event(undefined, chunk(delta, null)))) return sse.end();
  }

  const finish = plan.kind === 'tool' ? 'tool_calls' : FINISH[plan.finish];
  if (!(await sse.event(undefined, chunk({}, finish)))) return sse.end();
  if (usage && !(await sse.event(undefined, { ...base, choices: [], usage }))) return sse.end();
  await sse.event(undefined, '[DONE]');
  sse.end();
}
