import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Sim } from '../context.ts';
import { type Conversation, type OutputFormat, planReply, type Plan, splitDeltas, type ToolChoice, type ToolSpec, toolResultText } from '../engine.ts';
import { sendError } from '../errors.ts';
import { newId } from '../ids.ts';
import { asArray, asInteger, asObject, asString, isObject } from '../json.ts';
import { type Effects, prepare } from '../pipeline.ts';
import { SseStream } from '../sse.ts';
import { unixNow } from '../clock.ts';
import { MALFORMED_EVENT_DATA, STREAM_ERROR_MESSAGE, streamCut } from '../stream-faults.ts';
import { countTokens } from '../tokens.ts';
import type { JsonObject } from '../types.ts';

const TEXT_PART_TYPES = new Set(['input_text', 'output_text', 'text']);

function itemText(content: unknown): string {
  if (typeof content === 'string') return content;
  return asArray(content)
    .map((p) => (isObject(p) && TEXT_PART_TYPES.has(String(p.type)) && typeof p.text === 'string' ? p.text : ''))
    .filter((t) => t !== '')
    .join('\n');
}

function responsesToolChoice(value: unknown): ToolChoice {
  if (value === 'none') return { mode: 'none' };
  if (value === 'required') return { mode: 'required' };
  if (isObject(value) && (value.type === 'function' || value.type === 'custom') && typeof value.name === 'string') {
    return { mode: 'required', name: value.name };
  }
  return { mode: 'auto' };
}

function functionTools(tools: unknown, namespace?: string): ToolSpec[] {
  return asArray(tools).flatMap((t): ToolSpec[] => {
    const tool = asObject(t);
    if (tool.type === 'namespace' && namespace === undefined && typeof tool.name === 'string') return functionTools(tool.tools, tool.name);
    if ((tool.type !== 'function' && tool.type !== 'custom') || typeof tool.name !== 'string') return [];
    return [{ name: tool.name, schema: tool.parameters, ...(namespace === undefined ? {} : { namespace }), ...(tool.type === 'custom' ? { custom: true as const } : {}) }];
  });
}

/** `text.format`: a JSON schema (strict or not) or any JSON object. */
function responsesFormat(text: unknown): OutputFormat | undefined {
  const format = asObject(asObject(text).format);
  if (format.type === 'json_schema') return { kind: 'json_schema', schema: format.schema };
  return format.type === 'json_object' ? { kind: 'json_object' } : undefined;
}

/** A reasoning effort other than none / minimal asks the model to think. */
export function thinks(effort: unknown): boolean {
  return typeof effort === 'string' && effort !== 'none' && effort !== 'minimal';
}

export function responsesConversation(body: JsonObject): Conversation {
  const tools = functionTools(body.tools);
  const toolChoice = responsesToolChoice(body.tool_choice);
  const settings = { tools, toolChoice, format: responsesFormat(body.text), reasoning: thinks(asObject(body.reasoning).effort) };
  if (typeof body.input === 'string') return { lastUserText: body.input, ...settings };
  const items = asArray(body.input).map(asObject);
  const last = items.at(-1);
  const lastUser = items.findLast((i) => i.role === 'user' && (i.type === undefined || i.type === 'message'));
  return {
    lastUserText: lastUser ? itemText(lastUser.content) : '',
    toolResult: last?.type === 'function_call_output' ? toolResultText(last.output) : undefined,
    ...settings,
  };
}

function inputTokens(body: JsonObject): number {
  return countTokens({ instructions: body.instructions, input: body.input, tools: body.tools });
}

interface ResponseIds {
  id: string;
  createdAt: number;
  model: string;
  itemId: string;
  callId: string;
  reasoningId: string;
}

function responseObject(
  body: JsonObject,
  ids: ResponseIds,
  status: 'in_progress' | 'completed' | 'incomplete',
  output: JsonObject[],
  usage: JsonObject | null,
): JsonObject {
  return {
    id: ids.id,
    object: 'response',
    created_at: ids.createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: null,
    model: ids.model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? 'disabled',
    usage,
    user: null,
    metadata: body.metadata ?? {},
  };
}

/**
 * The reasoning item an answer starts with when it thought: its summary, and the reasoning as
 * opaque `encrypted_content` when the request includes it (as `store: false` clients do).
 */
function reasoningItem(body: JsonObject, ids: ResponseIds, text: string, done: boolean): JsonObject {
  const item: JsonObject = { id: ids.reasoningId, type: 'reasoning', summary: done ? [{ type: 'summary_text', text }] : [] };
  if (asArray(body.include).includes('reasoning.encrypted_content')) item.encrypted_content = done ? Buffer.from(`sim:${text}`).toString('base64') : null;
  return item;
}

function outputItem(ids: ResponseIds, plan: Plan, done: boolean): JsonObject {
  if (plan.kind === 'tool') {
    const status = done ? 'completed' : 'in_progress';
    const item: JsonObject = plan.custom
      ? { id: ids.itemId, type: 'custom_tool_call', status, call_id: ids.callId, name: plan.name, input: done ? plan.argsJson : '' }
      : { id: ids.itemId, type: 'function_call', status, arguments: done ? plan.argsJson : '', call_id: ids.callId, name: plan.name };
    if (plan.namespace !== undefined) item.namespace = plan.namespace;
    return item;
  }
  const status = !done ? 'in_progress' : plan.finish === 'length' ? 'incomplete' : 'completed';
  return {
    id: ids.itemId,
    type: 'message',
    status,
    role: 'assistant',
    content: done ? [textPart(plan.text)] : [],
  };
}

function textPart(text: string): JsonObject {
  return { type: 'output_text', annotations: [], logprobs: [], text };
}

function finalStatus(plan: Plan): 'completed' | 'incomplete' {
  return plan.kind === 'text' && plan.finish === 'length' ? 'incomplete' : 'completed';
}

/** POST /responses and POST /responses/input_tokens. */
export function registerResponses(app: FastifyInstance, sim: Sim): void {
  app.post('/responses', async (request, reply) => {
    const body = asObject(request.body);
    if (body.input === undefined || body.input === null) {
      return sendError(reply, 'openai', 400, "Missing required parameter: 'input'.", { param: 'input' });
    }
    const maxField = body.max_output_tokens;
    const maxTokens = maxField === undefined || maxField === null ? undefined : asInteger(maxField);
    if (maxTokens !== undefined && maxTokens < 1) {
      return sendError(reply, 'openai', 400, "Invalid 'max_output_tokens': must be at least 1.", { param: 'max_output_tokens' });
    }
    const conv = responsesConversation(body);
    const stream = body.stream === true;
    const ready = await prepare(sim, reply, {
      provider: 'openai',
      modelId: asString(body.model),
      kinds: ['text'],
      text: conv.lastUserText,
      stream,
    });
    if (!ready) return reply;

    const plan = planReply(conv, ready.effects, maxTokens);
    const promptTokens = inputTokens(body);
    const usage =
      ready.effects.fault?.kind === 'no_usage'
        ? null
        : {
            input_tokens: promptTokens,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: plan.outputTokens,
            output_tokens_details: { reasoning_tokens: plan.reasoning?.tokens ?? 0 },
            total_tokens: promptTokens + plan.outputTokens,
          };
    const ids: ResponseIds = {
      id: newId('resp_sim'),
      createdAt: unixNow(),
      model: ready.model.id,
      itemId: newId(plan.kind !== 'tool' ? 'msg_sim' : plan.custom ? 'ctc_sim' : 'fc_sim'),
      callId: newId('call_sim'),
      reasoningId: newId('rs_sim'),
    };
    if (!stream) {
      const output = [...(plan.reasoning ? [reasoningItem(body, ids, plan.reasoning.text, true)] : []), outputItem(ids, plan, true)];
      return reply.send(responseObject(body, ids, finalStatus(plan), output, usage));
    }
    await streamResponse(reply, body, ids, plan, ready.effects, usage);
    return reply;
  });

  app.post('/responses/input_tokens', async (request, reply) => {
    const body = asObject(request.body);
    const modelId = asString(body.model);
    if (modelId !== undefined) {
      const conv = responsesConversation(body);
      const input = { provider: 'openai' as const, modelId, kinds: ['text' as const], text: conv.lastUserText, stream: false };
      const ready = await prepare(sim, reply, input);
      if (!ready) return reply;
    }
    return reply.send({ object: 'response.input_tokens', input_tokens: inputTokens(body) });
  });
}

/**
 * `event: <type>` / `data: {type, sequence_number, ...}` events from `response.created` to
 * `response.completed` (or `response.incomplete` when the token cap cut the text, as the real API does).
 */
async function streamResponse(
  reply: FastifyReply,
  body: JsonObject,
  ids: ResponseIds,
  plan: Plan,
  effects: Effects,
  usage: JsonObject | null,
): Promise<void> {
  const sse = new SseStream(reply, { delayMs: effects.chunkDelayMs });
  let sequence = 0;
  const send = (type: string, fields: JsonObject): Promise<boolean> =>
    sse.event(type, { type, sequence_number: sequence++, ...fields });
  const done: JsonObject[] = [];
  if (!(await send('response.created', { response: responseObject(body, ids, 'in_progress', [], null) }))) return sse.end();
  if (!(await send('response.in_progress', { response: responseObject(body, ids, 'in_progress', [], null) }))) return sse.end();
  if (plan.reasoning) {
    const text = plan.reasoning.text;
    const part = { item_id: ids.reasoningId, output_index: 0, summary_index: 0 };
    const item = reasoningItem(body, ids, text, true);
    const ok =
      (await send('response.output_item.added', { output_index: 0, item: reasoningItem(body, ids, text, false) })) &&
      (await send('response.reasoning_summary_part.added', { ...part, part: { type: 'summary_text', text: '' } })) &&
      (await send('response.reasoning_summary_text.delta', { ...part, delta: text })) &&
      (await send('response.reasoning_summary_text.done', { ...part, text })) &&
      (await send('response.reasoning_summary_part.done', { ...part, part: { type: 'summary_text', text } })) &&
      (await send('response.output_item.done', { output_index: 0, item }));
    if (!ok) return sse.end();
    done.push(item);
  }
  const outputIndex = done.length;
  const at = { item_id: ids.itemId, output_index: outputIndex };
  if (!(await send('response.output_item.added', { output_index: outputIndex, item: outputItem(ids, plan, false) }))) return sse.end();
  if (plan.kind === 'text' && !(await send('response.content_part.added', { ...at, content_index: 0, part: textPart('') }))) {
    return sse.end();
  }

  const deltas = splitDeltas(plan.kind === 'tool' ? plan.argsJson : plan.text);
  const cut = streamCut(effects.fault, deltas.length);
  for (let i = 0; i <= deltas.length; i++) {
    if (cut?.at === i) {
      if (cut.kind === 'malformed') await sse.event('response.output_text.delta', MALFORMED_EVENT_DATA);
      else await send('error', { code: 'server_error', message: STREAM_ERROR_MESSAGE, param: null });
      return sse.end();
    }
    if (i === deltas.length) break;
    const delta = deltas[i];
    const ok =
      plan.kind === 'tool'
        ? await send(plan.custom ? 'response.custom_tool_call_input.delta' : 'response.function_call_arguments.delta', { ...at, delta })
        : await send('response.output_text.delta', { ...at, content_index: 0, delta, logprobs: [] });
    if (!ok) return sse.end();
  }

  if (plan.kind === 'tool') {
    const finished = plan.custom
      ? send('response.custom_tool_call_input.done', { ...at, input: plan.argsJson })
      : send('response.function_call_arguments.done', { ...at, name: plan.name, arguments: plan.argsJson });
    if (!(await finished)) return sse.end();
  } else {
    if (!(await send('response.output_text.done', { ...at, content_index: 0, text: plan.text, logprobs: [] }))) return sse.end();
    if (!(await send('response.content_part.done', { ...at, content_index: 0, part: textPart(plan.text) }))) return sse.end();
  }
  const item = outputItem(ids, plan, true);
  if (!(await send('response.output_item.done', { output_index: outputIndex, item }))) return sse.end();
  const status = finalStatus(plan);
  await send(`response.${status}`, { response: responseObject(body, ids, status, [...done, item], usage) });
  sse.end();
}
