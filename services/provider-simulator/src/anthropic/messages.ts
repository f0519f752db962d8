import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Sim } from '../context.ts';
import { type Conversation, type OutputFormat, planReply, type Plan, splitDeltas, type ToolChoice, toolResultText } from '../engine.ts';
import { sendError } from '../errors.ts';
import { newId } from '../ids.ts';
import { asArray, asInteger, asObject, asString, isObject } from '../json.ts';
import { type Effects, prepare } from '../pipeline.ts';
import { SseStream } from '../sse.ts';
import { MALFORMED_EVENT_DATA, streamCut } from '../stream-faults.ts';
import type { JsonObject } from '../types.ts';
import { anthropicInputTokens, anthropicInputUsage, type InputUsage } from './cache.ts';

function blocksText(content: unknown): string {
  if (typeof content === 'string') return content;
  return asArray(content)
    .map((b) => (isObject(b) && b.type === 'text' && typeof b.text === 'string' ? b.text : ''))
    .filter((t) => t !== '')
    .join('\n');
}

function anthropicToolChoice(value: unknown): ToolChoice {
  const choice = asObject(value);
  if (choice.type === 'none') return { mode: 'none' };
  if (choice.type === 'any') return { mode: 'required' };
  if (choice.type === 'tool' && typeof choice.name === 'string') return { mode: 'required', name: choice.name };
  return { mode: 'auto' };
}

export function messagesConversation(body: JsonObject): Conversation {
  const messages = asArray(body.messages).map(asObject);
  const last = messages.at(-1);
  const lastUser = messages.findLast((m) => m.role === 'user');
  const results = last?.role === 'user' ? asArray(last.content).map(asObject).filter((b) => b.type === 'tool_result') : [];
  return {
    lastUserText: lastUser ? blocksText(lastUser.content) : '',
    toolResult: results.length > 0 ? results.map((r) => toolResultText(r.content ?? '')).join(' ') : undefined,
    tools: asArray(body.tools).flatMap((t) => {
      const tool = asObject(t);
      const usable = typeof tool.name === 'string' && tool.input_schema !== undefined;
      return usable ? [{ name: String(tool.name), schema: tool.input_schema }] : [];
    }),
    toolChoice: anthropicToolChoice(body.tool_choice),
    format: anthropicFormat(body),
    // Thinking `enabled` (with a budget) or `adaptive` (the model decides; the simulator always thinks).
    reasoning: ['enabled', 'adaptive'].includes(String(asObject(body.thinking).type)),
  };
}

/** Structured output: `output_config.format` (or the older `output_format`), a JSON schema. */
function anthropicFormat(body: JsonObject): OutputFormat | undefined {
  const format = asObject(asObject(body.output_config).format ?? body.output_format);
  return format.type === 'json_schema' ? { kind: 'json_schema', schema: format.schema } : undefined;
}

/** A thinking block's signature: opaque to clients, which send it back with the block. */
function signature(text: string): string {
  return Buffer.from(`sim-signature:${text.length}`).toString('base64');
}

const STOP_REASONS: Record<'stop' | 'length', string> = { stop: 'end_turn', length: 'max_tokens' };

function stopReason(plan: Plan): string {
  return plan.kind === 'tool' ? 'tool_use' : STOP_REASONS[plan.finish];
}

function usageOf(input: InputUsage, outputTokens: number): JsonObject {
  return {
    ...input,
    cache_creation: { ephemeral_5m_input_tokens: input.cache_creation_input_tokens, ephemeral_1h_input_tokens: 0 },
    output_tokens: outputTokens,
    service_tier: 'standard',
  };
}

function contentBlock(plan: Plan, toolUseId: string): JsonObject {
  return plan.kind === 'tool'
    ? { type: 'tool_use', id: toolUseId, name: plan.name, input: plan.args }
    : { type: 'text', text: plan.text };
}

/** Validates the fields Anthropic requires; returns an error message or undefined. */
function invalidBody(body: JsonObject, needsMaxTokens: boolean): string | undefined {
  if (!Array.isArray(body.messages)) return 'messages: Field required';
  if (needsMaxTokens) {
    if (body.max_tokens === undefined) return 'max_tokens: Field required';
    const max = asInteger(body.max_tokens);
    if (max === undefined || max < 1) return 'max_tokens: Input should be a valid integer greater than or equal to 1';
  }
  return undefined;
}

/** POST /v1/messages and POST /v1/messages/count_tokens. */
export function registerMessages(app: FastifyInstance, sim: Sim): void {
  app.post('/v1/messages', async (request, reply) => {
    const body = asObject(request.body);
    const invalid = invalidBody(body, true);
    if (invalid) return sendError(reply, 'anthropic', 400, invalid);
    const conv = messagesConversation(body);
    const stream = body.stream === true;
    const ready = await prepare(sim, reply, {
      provider: 'anthropic',
      modelId: asString(body.model),
      kinds: ['text'],
      text: conv.lastUserText,
      stream,
    });
    if (!ready) return reply;

    const plan = planReply(conv, ready.effects, asInteger(body.max_tokens));
    const input = ready.effects.fault?.kind === 'no_usage' ? undefined : anthropicInputUsage(body);
    const ids = { id: newId('msg_sim'), toolUseId: newId('toolu_sim'), model: ready.model.id };
    if (!stream) {
      const message: JsonObject = {
        id: ids.id,
        type: 'message',
        role: 'assistant',
        model: ids.model,
        content: [
          ...(plan.reasoning ? [{ type: 'thinking', thinking: plan.reasoning.text, signature: signature(plan.reasoning.text) }] : []),
          contentBlock(plan, ids.toolUseId),
        ],
        stop_reason: stopReason(plan),
        stop_sequence: null,
      };
      if (input) message.usage = usageOf(input, plan.outputTokens);
      return reply.send(message);
    }
    await streamMessage(reply, ids, plan, ready.effects, input);
    return reply;
  });

  app.post('/v1/messages/count_tokens', async (request, reply) => {
    const body = asObject(request.body);
    const invalid = invalidBody(body, false);
    if (invalid) return sendError(reply, 'anthropic', 400, invalid);
    const conv = messagesConversation(body);
    const ready = await prepare(sim, reply, {
      provider: 'anthropic',
      modelId: asString(body.model),
      kinds: ['text'],
      text: conv.lastUserText,
      stream: false,
    });
    if (!ready) return reply;
    return reply.send({ input_tokens: anthropicInputTokens(body) });
  });
}

/**
 * message_start, content_block_start, ping, content_block_delta (text_delta or input_json_delta)...,
 * content_block_stop, message_delta (stop_reason + usage), message_stop.
 */
async function streamMessage(
  reply: FastifyReply,
  ids: { id: string; toolUseId: string; model: string },
  plan: Plan,
  effects: Effects,
  input: InputUsage | undefined,
): Promise<void> {
  const sse = new SseStream(reply, { delayMs: effects.chunkDelayMs });
  const send = (type: string, fields: JsonObject = {}): Promise<boolean> => sse.event(type, { type, ...fields });

  const start: JsonObject = {
    id: ids.id,
    type: 'message',
    role: 'assistant',
    model: ids.model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
  };
  if (input) start.usage = usageOf(input, 1);
  if (!(await send('message_start', { message: start }))) return sse.end();
  let index = 0;
  if (plan.reasoning) {
    const { text } = plan.reasoning;
    const ok =
      (await send('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } })) &&
      (await send('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: text } })) &&
      (await send('content_block_delta', { index, delta: { type: 'signature_delta', signature: signature(text) } })) &&
      (await send('content_block_stop', { index }));
    if (!ok) return sse.end();
    index += 1;
  }
  const block =
    plan.kind === 'tool' ? { type: 'tool_use', id: ids.toolUseId, name: plan.name, input: {} } : { type: 'text', text: '' };
  if (!(await send('content_block_start', { index, content_block: block }))) return sse.end();
  if (!(await send('ping'))) return sse.end();

  const deltas = splitDeltas(plan.kind === 'tool' ? plan.argsJson : plan.text);
  const cut = streamCut(effects.fault, deltas.length);
  for (let i = 0; i <= deltas.length; i++) {
    if (cut?.at === i) {
      if (cut.kind === 'malformed') await sse.event('content_block_delta', MALFORMED_EVENT_DATA);
      else await send('error', { error: { type: 'overloaded_error', message: 'Overloaded' } });
      return sse.end();
    }
    if (i === deltas.length) break;
    const delta =
      plan.kind === 'tool' ? { type: 'input_json_delta', partial_json: deltas[i] } : { type: 'text_delta', text: deltas[i] };
    if (!(await send('content_block_delta', { index, delta }))) return sse.end();
  }

  if (!(await send('content_block_stop', { index }))) return sse.end();
  const messageDelta: JsonObject = { delta: { stop_reason: stopReason(plan), stop_sequence: null } };
  if (input) messageDelta.usage = { ...input, output_tokens: plan.outputTokens };
  if (!(await send('message_delta', messageDelta))) return sse.end();
  await send('message_stop');
  sse.end();
}
