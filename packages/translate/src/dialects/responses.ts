/** OpenAI responses (`/v1/responses`). */
import { TranslateError } from '../errors.ts';
import { imageFromUrl, imageUrl } from '../images.ts';
import type {
  Codec,
  ImagePart,
  IrRequest,
  IrResponse,
  Message,
  OutputEvent,
  ReasoningPart,
  RequestOptions,
  ResponseContext,
  ResponseFormat,
  SseEvent,
  StopReason,
  StreamEmitter,
  StreamEvent,
  StreamFailure,
  StreamParser,
  TextPart,
  Tool,
  ToolChoice,
  Usage,
} from '../ir.ts';
import { hostedToolLabel } from '../hosted-tools.ts';
import { arr, bool, compact, isRecord, num, rec, str, type Json } from '../json.ts';
import { readStopReason, STOP_TO_WIRE } from '../stop-reasons.ts';
import { readResponsesUsage, writeResponsesUsage } from '../usage.ts';
import { joinText, pushAssistantParts, pushMessage, pushToolResult, restrictToAllowed, resultsFirst, textPart } from './common.ts';
import { openReasoning, sealReasoning } from '../reasoning.ts';

// ---------------------------------------------------------------------------------------------
// Requests

const TEXT_TYPES = new Set(['input_text', 'output_text', 'text']);

function readContent(content: unknown, where: string): Array<TextPart | ImagePart> {
  if (typeof content === 'string') return textPart(content);
  const parts: Array<TextPart | ImagePart> = [];
  arr(content).forEach((raw, j) => {
    const part = rec(raw);
    if (TEXT_TYPES.has(String(part.type))) parts.push(...textPart(str(part.text) ?? ''));
    else if (part.type === 'refusal') parts.push(...textPart(str(part.refusal) ?? ''));
    else if (part.type === 'input_image' && typeof part.image_url === 'string') parts.push(imageFromUrl(part.image_url, str(part.detail)));
    else {
      // `file_id` images and files live in OpenAI's storage: no other provider can read them.
      const kind = part.type === 'input_image' ? 'input_image with file_id' : String(part.type);
      throw new TranslateError(`${where}.content[${j}]: content type "${kind}" cannot be sent to this model`);
    }
  });
  return parts;
}

/** A reasoning item's summary as one text. */
function summaryText(item: Json): string {
  return arr(item.summary).flatMap((s) => str(rec(s).text) ?? []).join('\n\n');
}

function readToolChoice(value: unknown): ToolChoice | undefined {
  if (value === 'auto' || value === 'none' || value === 'required') return { type: value };
  const choice = rec(value);
  if ((choice.type !== 'function' && choice.type !== 'custom') || typeof choice.name !== 'string') return undefined;
  return { type: 'tool', name: typeof choice.namespace === 'string' ? flatName(choice.namespace, choice.name) : choice.name };
}

function readResponseFormat(value: unknown): ResponseFormat | undefined {
  const format = rec(rec(value).format);
  if (format.type === 'text' || format.type === 'json_object') return { type: format.type };
  if (format.type !== 'json_schema') return undefined;
  return {
    type: 'json_schema',
    name: str(format.name) ?? 'response',
    schema: rec(format.schema),
    strict: bool(format.strict),
    description: str(format.description),
  };
}

/** Input items dropped in translation: the call records of OpenAI's hosted tools. */
const DROPPED_ITEMS = new Set(['web_search_call', 'file_search_call', 'code_interpreter_call', 'image_generation_call']);

/** The one name a namespaced function goes by in a dialect without namespaces. */
const NAMESPACE_SEPARATOR = '__';

function flatName(namespace: string, name: string): string {
  return `${namespace}${NAMESPACE_SEPARATOR}${name}`;
}

function functionTool(tool: Json): Tool {
  return {
    name: str(tool.name) ?? '',
    description: str(tool.description),
    parameters: isRecord(tool.parameters) ? tool.parameters : undefined,
    strict: bool(tool.strict),
  };
}

/**
 * A custom tool takes free-form text, not JSON arguments. Other dialects have function tools only:
 * it goes as a function of one string argument, `input`, its grammar (if any) told in the
 * description; calls come back as `custom_tool_call` items with that text.
 */
const CUSTOM_INPUT = 'input';

function customTool(tool: Json): Tool {
  const format = rec(tool.format);
  const grammar = format.type === 'grammar' ? str(format.definition) : undefined;
  const description = [str(tool.description), grammar && `The input must follow this ${str(format.syntax) ?? ''} grammar:\n${grammar}`].filter(Boolean).join('\n\n');
  return {
    name: str(tool.name) ?? '',
    description: description === '' ? undefined : description,
    parameters: {
      type: 'object',
      properties: { [CUSTOM_INPUT]: { type: 'string', description: 'The raw input for the tool.' } },
      required: [CUSTOM_INPUT],
      additionalProperties: false,
    },
  };
}

/** A custom call's text from the function arguments it was sent as (the raw arguments when they are not that object). */
function customInput(args: string): string {
  try {
    const value: unknown = JSON.parse(args);
    if (isRecord(value) && typeof value[CUSTOM_INPUT] === 'string') return value[CUSTOM_INPUT];
  } catch {
    // Not JSON yet (cut off): the text as it came.
  }
  return args;
}

/** A call as the client knows it: `namespace` + `name` for a flattened namespaced function; `custom` for a custom tool's. */
type ClientCall = { id: string; name: string; namespace?: string; custom?: true };

/**
 * The flattened names of the request's namespaced tools → their namespace and own name, and which
 * tools are custom, so that calls come back to the client as it defined them.
 */
function restoreNames(request: Json | undefined): (call: { id: string; name: string }) => ClientCall {
  const names = new Map<string, { namespace?: string; name: string; custom?: true }>();
  const note = (tool: Json, namespace?: string): void => {
    const name = str(tool.name) ?? '';
    const custom = tool.type === 'custom' ? { custom: true as const } : {};
    if (namespace !== undefined) names.set(flatName(namespace, name), { namespace, name, ...custom });
    else if (tool.type === 'custom') names.set(name, { name, custom: true });
  };
  for (const raw of arr(request?.tools)) {
    const tool = rec(raw);
    if (tool.type === 'namespace') for (const inner of arr(tool.tools)) note(rec(inner), str(tool.name) ?? '');
    else note(tool);
  }
  return (call) => {
    const known = names.get(call.name);
    return known === undefined ? call : { id: call.id, ...known };
  };
}

function parseRequest(body: Json): IrRequest {
  for (const field of ['previous_response_id', 'conversation', 'prompt']) {
    if (body[field] !== undefined && body[field] !== null) {
      throw new TranslateError(`${field} refers to state stored by OpenAI and cannot be sent to this model`);
    }
  }
  if (body.background === true) throw new TranslateError('background asks for a feature of the provider\'s own servers and cannot be sent to this model');
  const system = textPart(str(body.instructions) ?? '').map((p) => p.text);
  const messages: Message[] = [];
  const input = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : arr(body.input);
  input.forEach((raw, i) => {
    const item = rec(raw);
    const where = `input[${i}]`;
    switch (item.type ?? 'message') {
      case 'message':
        if (item.role === 'system' || item.role === 'developer') {
          system.push(...readContent(item.content, where).flatMap((p) => (p.type === 'text' ? [p.text] : [])));
        } else if (item.role === 'assistant') {
          pushAssistantParts(messages, readContent(item.content, where));
        } else {
          pushMessage(messages, 'user', readContent(item.content, where));
        }
        break;
      case 'reasoning': {
        // Another provider's reasoning comes back sealed in encrypted_content (reasoning.ts) and goes
        // back to it; OpenAI's own reasoning means nothing to another model.
        const sealed = str(item.encrypted_content);
        const part = sealed === undefined ? undefined : openReasoning(sealed, summaryText(item));
        if (part !== undefined) pushAssistantParts(messages, [part]);
        break;
      }
      case 'function_call': {
        const name = str(item.name) ?? '';
        const namespace = str(item.namespace);
        pushAssistantParts(messages, [{
          type: 'tool_call',
          id: str(item.call_id) ?? '',
          name: namespace === undefined ? name : flatName(namespace, name),
          arguments: str(item.arguments) ?? '',
        }]);
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
        pushToolResult(messages, { type: 'tool_result', callId: str(item.call_id) ?? '', content: readContent(item.output, where) });
        break;
      case 'custom_tool_call': {
        const name = str(item.name) ?? '';
        const namespace = str(item.namespace);
        pushAssistantParts(messages, [{
          type: 'tool_call',
          id: str(item.call_id) ?? '',
          name: namespace === undefined ? name : flatName(namespace, name),
          arguments: JSON.stringify({ [CUSTOM_INPUT]: str(item.input) ?? '' }),
        }]);
        break;
      }
      default:
        // Reasoning (encrypted or not) is OpenAI's own; a hosted tool's call record is what its
        // tool did, already told in the answer's text: neither means anything to another model.
        if (DROPPED_ITEMS.has(String(item.type))) break;
        throw new TranslateError(`${where}: item type "${String(item.type)}" cannot be sent to this model`);
    }
  });
  const removedTools: string[] = [];
  const tools = arr(body.tools).flatMap((raw, i): Tool[] => {
    const tool = rec(raw);
    if (tool.type === 'function') return [functionTool(tool)];
    if (tool.type === 'namespace') {
      // A namespace groups function tools: flattened, each named `<namespace>__<name>` (the name
      // is restored on the way back, see `restoreNames`).
      const namespace = str(tool.name) ?? '';
      return arr(tool.tools).map((inner, j) => {
        const fn = rec(inner);
        if (fn.type !== 'function' && fn.type !== 'custom') throw new TranslateError(`tools[${i}].tools[${j}]: tool type "${String(fn.type)}" cannot be sent to this model`);
        return { ...(fn.type === 'custom' ? customTool(fn) : functionTool(fn)), name: flatName(namespace, str(fn.name) ?? '') };
      });
    }
    if (tool.type === 'custom') return [customTool(tool)];
    // A tool OpenAI runs (web search, file search, code interpreter…): another provider cannot.
    removedTools.push(hostedToolLabel('responses', tool));
    return [];
  });
  const choice = rec(body.tool_choice);
  const selection =
    choice.type === 'allowed_tools'
      ? restrictToAllowed(tools, choice.mode, arr(choice.tools).map((t) => str(rec(t).name)))
      : { tools, toolChoice: readToolChoice(body.tool_choice) };
  return {
    removedTools,
    system,
    messages,
    ...selection,
    parallelToolCalls: bool(body.parallel_tool_calls),
    maxOutputTokens: num(body.max_output_tokens),
    temperature: num(body.temperature),
    topP: num(body.top_p),
    responseFormat: readResponseFormat(body.text),
    reasoningEffort: str(rec(body.reasoning).effort),
  };
}

function writeInputPart(part: TextPart | ImagePart): Json {
  if (part.type === 'text') return { type: 'input_text', text: part.text };
  return { type: 'input_image', image_url: imageUrl(part.source), detail: part.detail ?? 'auto' };
}

function writeInput(messages: Message[]): Json[] {
  const items: Json[] = [];
  for (const message of messages) {
    if (message.role === 'system') {
      // In place, as OpenAI words an instruction: a developer message.
      items.push({ role: 'developer', content: joinText(message.parts) });
      continue;
    }
    if (message.role === 'assistant') {
      let text = '';
      const flush = (): void => {
        if (text !== '') items.push({ role: 'assistant', content: text });
        text = '';
      };
      for (const part of message.parts) {
        if (part.type === 'text') text += part.text;
        if (part.type !== 'tool_call') continue;
        flush();
        items.push({ type: 'function_call', call_id: part.id, name: part.name, arguments: part.arguments });
      }
      flush();
      continue;
    }
    const { results, rest } = resultsFirst(message.parts);
    for (const result of results) {
      const only = result.content[0];
      const output = result.content.length === 1 && only?.type === 'text' ? only.text : result.content.length === 0 ? '' : result.content.map(writeInputPart);
      items.push({ type: 'function_call_output', call_id: result.callId, output });
    }
    const content = rest.filter((p): p is TextPart | ImagePart => p.type === 'text' || p.type === 'image');
    const only = content[0];
    if (content.length === 1 && only?.type === 'text') items.push({ role: 'user', content: only.text });
    else if (content.length > 0) items.push({ role: 'user', content: content.map(writeInputPart) });
  }
  return items;
}

function writeToolChoice(choice: ToolChoice | undefined): unknown {
  if (choice === undefined) return undefined;
  return choice.type === 'tool' ? { type: 'function', name: choice.name } : choice.type;
}

function writeResponseFormat(format: ResponseFormat | undefined): Json | undefined {
  if (format === undefined) return undefined;
  if (format.type !== 'json_schema') return { format: { type: format.type } };
  return { format: compact({ type: 'json_schema', name: format.name, description: format.description, schema: format.schema, strict: format.strict }) };
}

function emitRequest(req: IrRequest, opts: RequestOptions): Json {
  const hasTools = req.tools.length > 0;
  return compact({
    model: opts.upstreamModel,
    instructions: req.system.length > 0 ? req.system.join('\n\n') : undefined,
    input: writeInput(req.messages),
    tools: hasTools
      ? req.tools.map((t) =>
          compact({
            type: 'function',
            name: t.name,
            description: t.description,
            parameters: t.parameters ?? { type: 'object', properties: {} },
            // responses defaults to strict schemas, which reject most schemas written for other dialects.
            strict: t.strict ?? false,
          }),
        )
      : undefined,
    tool_choice: hasTools ? writeToolChoice(req.toolChoice) : undefined,
    parallel_tool_calls: hasTools ? req.parallelToolCalls : undefined,
    max_output_tokens: req.maxOutputTokens,
    temperature: req.temperature,
    top_p: req.topP,
    text: writeResponseFormat(req.responseFormat),
    reasoning: req.reasoningEffort === undefined ? undefined : { effort: req.reasoningEffort },
    // A client of another dialect never asked OpenAI to keep the conversation.
    store: false,
  });
}

// ---------------------------------------------------------------------------------------------
// Responses

/** The wire reason a response ended with: `completed`, or its incomplete reason. */
function wireReason(response: Json): string | undefined {
  if (response.status === 'incomplete') return str(rec(response.incomplete_details).reason) ?? 'max_output_tokens';
  return str(response.status);
}

function parseResponse(body: Json): IrResponse {
  const parts: IrResponse['parts'] = [];
  for (const raw of arr(body.output)) {
    const item = rec(raw);
    if (item.type === 'message') parts.push(...textPart(joinText(readContent(item.content, 'output'))));
    else if (item.type === 'function_call') {
      parts.push({ type: 'tool_call', id: str(item.call_id) ?? '', name: str(item.name) ?? '', arguments: str(item.arguments) ?? '' });
    }
  }
  const usage = readResponsesUsage(body.usage);
  const stopReason = readStopReason('responses', wireReason(body), parts.some((p) => p.type === 'tool_call'));
  return usage === undefined ? { parts, stopReason } : { parts, stopReason, usage };
}

/** Output item ids are derived from the response id: deterministic, and distinct per item. */
function itemId(ctx: ResponseContext, kind: 'msg' | 'fc' | 'rs', outputIndex: number): string {
  return `${kind}_${ctx.id}_${outputIndex}`;
}

const outputText = (text: string): Json => ({ type: 'output_text', text, annotations: [] });

function messageItem(id: string, text: string, status: string): Json {
  return { id, type: 'message', status, role: 'assistant', content: status === 'in_progress' ? [] : [outputText(text)] };
}

/**
 * Another provider's reasoning as a reasoning item: its text as the summary, its signature sealed in
 * `encrypted_content` (always, whatever `include` says: the gateway keeps nothing, so a client can
 * only send it back if it has it).
 */
function reasoningItem(id: string, part: ReasoningPart, done: boolean): Json {
  const summary = done && part.text !== '' ? [{ type: 'summary_text', text: part.text }] : [];
  return { id, type: 'reasoning', summary, encrypted_content: done ? (sealReasoning(part) ?? null) : null };
}

function callItem(id: string, call: ClientCall, args: string, status: string): Json {
  const item: Json = call.custom
    ? { id, type: 'custom_tool_call', status, call_id: call.id, name: call.name, input: args === '' ? '' : customInput(args) }
    : { id, type: 'function_call', status, arguments: args, call_id: call.id, name: call.name };
  if (call.namespace !== undefined) item.namespace = call.namespace;
  return item;
}

function completion(stopReason: StopReason): { status: string; incomplete_details: Json | null } {
  const reason = STOP_TO_WIRE[stopReason].responses;
  return reason === 'completed' ? { status: 'completed', incomplete_details: null } : { status: 'incomplete', incomplete_details: { reason } };
}

/**
 * The request settings a response echoes (the SDK's `Response` requires most of them), as the
 * client sent them, else the API's defaults.
 */
function requestSettings(request: Json = {}): Json {
  return {
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    temperature: request.temperature ?? 1,
    tool_choice: request.tool_choice ?? 'auto',
    tools: request.tools ?? [],
    top_p: request.top_p ?? 1,
  };
}

function responseObject(ctx: ResponseContext, fields: Json): Json {
  return {
    id: ctx.id,
    object: 'response',
    created_at: ctx.created,
    status: 'in_progress',
    error: null,
    incomplete_details: null,
    model: ctx.model,
    output: [],
    usage: null,
    ...requestSettings(ctx.request),
    ...fields,
  };
}

function emitResponse(res: IrResponse, ctx: ResponseContext): Json {
  const done = completion(res.stopReason);
  const restore = restoreNames(ctx.request);
  const output = res.parts.map((part, i) => {
    // The last item is where the response stopped: it is incomplete when the response is.
    const status = i === res.parts.length - 1 ? done.status : 'completed';
    switch (part.type) {
      case 'text':
        return messageItem(itemId(ctx, 'msg', i), part.text, status);
      case 'tool_call':
        return callItem(itemId(ctx, 'fc', i), restore(part), part.arguments, status);
      case 'reasoning':
        return reasoningItem(itemId(ctx, 'rs', i), part, true);
    }
  });
  return responseObject(ctx, { ...done, output, usage: res.usage === undefined ? null : writeResponsesUsage(res.usage) });
}

// ---------------------------------------------------------------------------------------------
// Streams

function createStreamParser(): StreamParser {
  let done = false;
  let nextIndex = 0;
  /** The one open block: text blocks are keyed `<output_index>:<content_index>`, calls `<output_index>`. */
  let open: { key: string; index: number; tool: boolean; args: boolean } | undefined;
  let sawTools = false;
  let usage: Usage | undefined;

  function close(out: StreamEvent[]): void {
    if (open !== undefined) out.push({ type: 'block_stop', index: open.index });
    open = undefined;
  }
  function openBlock(out: StreamEvent[], key: string, tool: { id: string; name: string } | undefined): number {
    if (open?.key === key) return open.index;
    close(out);
    open = { key, index: nextIndex++, tool: tool !== undefined, args: false };
    out.push({ type: 'block_start', index: open.index, block: tool === undefined ? { type: 'text' } : { type: 'tool_call', ...tool } });
    return open.index;
  }

  return {
    push(event: SseEvent): StreamEvent[] {
      if (done) return [];
      const data = rec(event.data);
      const out: StreamEvent[] = [];
      const textKey = `${String(data.output_index)}:${String(data.content_index ?? 0)}`;
      const callKey = String(data.output_index);
      switch (data.type) {
        case 'response.created':
          out.push({ type: 'start' });
          break;
        case 'response.output_item.added': {
          const item = rec(data.item);
          if (item.type === 'function_call') {
            sawTools = true;
            openBlock(out, callKey, { id: str(item.call_id) ?? '', name: str(item.name) ?? '' });
          }
          break;
        }
        case 'response.content_part.added':
          if (rec(data.part).type === 'output_text' || rec(data.part).type === 'refusal') openBlock(out, textKey, undefined);
          break;
        case 'response.output_text.delta':
        case 'response.refusal.delta': {
          const text = str(data.delta) ?? '';
          if (text !== '') out.push({ type: 'text_delta', index: openBlock(out, textKey, undefined), text });
          break;
        }
        case 'response.content_part.done':
          if (open?.key === textKey) close(out);
          break;
        case 'response.function_call_arguments.delta': {
          const json = str(data.delta) ?? '';
          if (open?.key === callKey && json !== '') {
            open.args = true;
            out.push({ type: 'tool_args_delta', index: open.index, json });
          }
          break;
        }
        case 'response.output_item.done': {
          const item = rec(data.item);
          // Some servers send a call's arguments only with its final item.
          const args = str(item.arguments) ?? '';
          if (item.type === 'function_call' && open?.key === callKey && !open.args && args !== '') {
            out.push({ type: 'tool_args_delta', index: open.index, json: args });
          }
          if (open?.key === callKey || open?.key.startsWith(`${callKey}:`)) close(out);
          break;
        }
        case 'response.completed':
        case 'response.incomplete': {
          const response = rec(data.response);
          close(out);
          done = true;
          usage = readResponsesUsage(response.usage) ?? usage;
          const stopReason = readStopReason('responses', wireReason(response), sawTools);
          out.push(usage === undefined ? { type: 'finish', stopReason } : { type: 'finish', stopReason, usage });
          break;
        }
        case 'response.failed':
        case 'error': {
          done = true;
          const message = str(rec(rec(data.response).error).message) ?? str(data.message) ?? 'upstream stream error';
          out.push({ type: 'error', message, code: 'upstream_error' });
          break;
        }
      }
      return out;
    },
    end(): StreamEvent[] {
      if (done) return [];
      done = true;
      return [{ type: 'error', message: 'upstream stream ended before it finished', code: 'upstream_error' }];
    },
    usage: () => usage,
  };
}

function errorEvents(failure: StreamFailure, ctx: ResponseContext, sequence: number): OutputEvent[] {
  const code = failure.code ?? 'server_error';
  return [
    { event: 'error', data: { type: 'error', code, message: failure.message, param: null, sequence_number: sequence } },
    {
      event: 'response.failed',
      data: {
        type: 'response.failed',
        sequence_number: sequence + 1,
        response: responseObject(ctx, { status: 'failed', error: { code, message: failure.message } }),
      },
    },
  ];
}

/**
 * Neutral events → `response.created`, `response.in_progress`, per item `output_item.added` …
 * `output_item.done`, then `response.completed` (or `response.incomplete`) with the whole response.
 */
function createStreamEmitter(ctx: ResponseContext): StreamEmitter {
  let sequence = 0;
  let started = false;
  let closed = false;
  const output: Json[] = [];
  /** The open item; `reasoning` for a reasoning item (`summarized` once its summary part is open). */
  let current:
    | { index: number; outputIndex: number; id: string; call?: ClientCall; text: string; reasoning?: ReasoningPart; summarized?: boolean }
    | undefined;
  const restore = restoreNames(ctx.request);

  const ev = (type: string, fields: Json, carriesUsage = false): OutputEvent => {
    const event: OutputEvent = { event: type, data: { type, sequence_number: sequence++, ...fields } };
    if (carriesUsage) event.carriesUsage = true;
    return event;
  };

  function stop(out: OutputEvent[], status: string): void {
    if (current === undefined) return;
    const { id, outputIndex, call, text, reasoning } = current;
    const at = { item_id: id, output_index: outputIndex };
    if (reasoning !== undefined) {
      const part = { ...reasoning, text };
      if (current.summarized) {
        const summary = { ...at, summary_index: 0 };
        out.push(
          ev('response.reasoning_summary_text.done', { ...summary, text }),
          ev('response.reasoning_summary_part.done', { ...summary, part: { type: 'summary_text', text } }),
        );
      }
      const item = reasoningItem(id, part, true);
      output.push(item);
      out.push(ev('response.output_item.done', { output_index: outputIndex, item }));
      current = undefined;
      return;
    }
    if (call === undefined) {
      out.push(
        ev('response.output_text.done', { ...at, content_index: 0, text, logprobs: [] }),
        ev('response.content_part.done', { ...at, content_index: 0, part: outputText(text) }),
      );
    } else if (call.custom) {
      // The text is known once the arguments it came in are whole: it goes in one delta.
      const input = customInput(text);
      out.push(ev('response.custom_tool_call_input.delta', { ...at, delta: input }), ev('response.custom_tool_call_input.done', { ...at, input }));
    } else {
      out.push(ev('response.function_call_arguments.done', { ...at, arguments: text }));
    }
    const item = call === undefined ? messageItem(id, text, status) : callItem(id, call, text, status);
    output.push(item);
    out.push(ev('response.output_item.done', { output_index: outputIndex, item }));
    current = undefined;
  }

  return {
    push(event: StreamEvent): OutputEvent[] {
      if (closed) return [];
      const out: OutputEvent[] = [];
      if (!started && event.type !== 'error') {
        started = true;
        out.push(ev('response.created', { response: responseObject(ctx, {}) }), ev('response.in_progress', { response: responseObject(ctx, {}) }));
      }
      switch (event.type) {
        case 'block_start': {
          stop(out, 'completed');
          const outputIndex = output.length;
          if (event.block.type === 'reasoning') {
            const id = itemId(ctx, 'rs', outputIndex);
            const reasoning: ReasoningPart = { type: 'reasoning', text: '' };
            current = { index: event.index, outputIndex, id, text: '', reasoning };
            out.push(ev('response.output_item.added', { output_index: outputIndex, item: reasoningItem(id, reasoning, false) }));
          } else if (event.block.type === 'text') {
            const id = itemId(ctx, 'msg', outputIndex);
            current = { index: event.index, outputIndex, id, text: '' };
            out.push(
              ev('response.output_item.added', { output_index: outputIndex, item: messageItem(id, '', 'in_progress') }),
              ev('response.content_part.added', { item_id: id, output_index: outputIndex, content_index: 0, part: outputText('') }),
            );
          } else {
            const id = itemId(ctx, 'fc', outputIndex);
            const call = restore({ id: event.block.id, name: event.block.name });
            current = { index: event.index, outputIndex, id, call, text: '' };
            out.push(ev('response.output_item.added', { output_index: outputIndex, item: callItem(id, call, '', 'in_progress') }));
          }
          break;
        }
        case 'reasoning_delta': {
          if (current?.index !== event.index || current.reasoning === undefined) break;
          const summary = { item_id: current.id, output_index: current.outputIndex, summary_index: 0 };
          if (!current.summarized) {
            current.summarized = true;
            out.push(ev('response.reasoning_summary_part.added', { ...summary, part: { type: 'summary_text', text: '' } }));
          }
          current.text += event.text;
          out.push(ev('response.reasoning_summary_text.delta', { ...summary, delta: event.text }));
          break;
        }
        case 'reasoning_signature':
          if (current?.index === event.index && current.reasoning !== undefined) {
            const { signature, source, redacted } = event;
            current.reasoning = { ...current.reasoning, signature: (current.reasoning.signature ?? '') + signature, source, ...(redacted ? { redacted } : {}) };
          }
          break;
        case 'text_delta':
        case 'tool_args_delta': {
          if (current?.index !== event.index) break;
          const delta = event.type === 'text_delta' ? event.text : event.json;
          current.text += delta;
          if (current.call?.custom) break;
          const at = { item_id: current.id, output_index: current.outputIndex };
          out.push(
            event.type === 'text_delta'
              ? ev('response.output_text.delta', { ...at, content_index: 0, delta, logprobs: [] })
              : ev('response.function_call_arguments.delta', { ...at, delta }),
          );
          break;
        }
        case 'finish': {
          const { status: state, incomplete_details } = completion(event.stopReason);
          // The last item is where the stream stopped: it is incomplete when the response is.
          stop(out, state);
          closed = true;
          const response = responseObject(ctx, {
            status: state,
            incomplete_details,
            output,
            usage: event.usage === undefined ? null : writeResponsesUsage(event.usage),
          });
          out.push(ev(state === 'completed' ? 'response.completed' : 'response.incomplete', { response }, true));
          break;
        }
        case 'error':
          closed = true;
          out.push(...errorEvents(event, ctx, sequence));
          sequence += 2;
          break;
        // An item stays open until the next block or the finish: only the finish tells whether
        // the output cap cut it off.
        case 'block_stop':
        case 'start':
          break;
      }
      return out;
    },
    end: () => [],
  };
}

export const responses: Codec = {
  parseRequest,
  emitRequest,
  parseResponse,
  emitResponse,
  readUsage: (body) => readResponsesUsage(body.usage),
  createStreamParser,
  createStreamEmitter,
  errorEvents,
};
