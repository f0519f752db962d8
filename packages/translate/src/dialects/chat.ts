/** OpenAI chat completions (`/chat/completions`), also spoken by OpenAI-compatible providers. */
import { TranslateError } from '../errors.ts';
import { imageFromUrl, imageUrl } from '../images.ts';
import type {
  Codec,
  ImagePart,
  IrRequest,
  IrResponse,
  Message,
  OutputEvent,
  Part,
  ResponseContext,
  ResponseFormat,
  SseEvent,
  StopReason,
  StreamEmitter,
  StreamEvent,
  StreamFailure,
  StreamParser,
  TextPart,
  ToolChoice,
  ToolResultPart,
  Usage,
} from '../ir.ts';
import { arr, bool, compact, isRecord, num, rec, str, strList, type Json } from '../json.ts';
import { readStopReason, STOP_TO_WIRE } from '../stop-reasons.ts';
import { readChatUsage, writeChatUsage } from '../usage.ts';
import { joinText, pushMessage, pushToolResult, refuseServerFeatures, restrictToAllowed, resultsFirst, textPart } from './common.ts';

// ---------------------------------------------------------------------------------------------
// Requests

/** Content of a chat message (string or parts) as neutral parts; assistant refusals read as text. */
function readContent(content: unknown, where: string): Array<TextPart | ImagePart> {
  if (typeof content === 'string') return textPart(content);
  const parts: Array<TextPart | ImagePart> = [];
  for (const raw of arr(content)) {
    const part = rec(raw);
    switch (part.type) {
      case 'text':
        parts.push(...textPart(str(part.text) ?? ''));
        break;
      case 'refusal':
        parts.push(...textPart(str(part.refusal) ?? ''));
        break;
      case 'image_url': {
        // `image_url` is an object `{url, detail}`; some clients send the bare URL string.
        const image = isRecord(part.image_url) ? part.image_url : { url: part.image_url };
        const url = str(image.url);
        if (url !== undefined) parts.push(imageFromUrl(url, str(image.detail)));
        break;
      }
      default:
        throw new TranslateError(`${where}: content part type "${String(part.type)}" cannot be sent to this model`);
    }
  }
  return parts;
}

function readToolChoice(value: unknown): ToolChoice | undefined {
  if (value === 'auto' || value === 'none' || value === 'required') return { type: value };
  const name = str(rec(rec(value).function).name);
  return name === undefined ? undefined : { type: 'tool', name };
}

function readResponseFormat(value: unknown): ResponseFormat | undefined {
  const format = rec(value);
  if (format.type === 'text' || format.type === 'json_object') return { type: format.type };
  if (format.type !== 'json_schema') return undefined;
  const spec = rec(format.json_schema);
  return {
    type: 'json_schema',
    name: str(spec.name) ?? 'response',
    schema: rec(spec.schema),
    strict: bool(spec.strict),
    description: str(spec.description),
  };
}

function parseRequest(body: Json): IrRequest {
  refuseServerFeatures(body, ['audio']);
  if (arr(body.modalities).some((m) => m !== 'text')) throw new TranslateError('modalities other than text cannot be sent to this model');
  const system: string[] = [];
  const messages: Message[] = [];
  arr(body.messages).forEach((raw, i) => {
    const m = rec(raw);
    const where = `messages[${i}]`;
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(...readContent(m.content, where).map((p) => (p.type === 'text' ? p.text : '')));
        break;
      case 'user':
        pushMessage(messages, 'user', readContent(m.content, where));
        break;
      case 'assistant': {
        const parts: Part[] = readContent(m.content, where);
        for (const rawCall of arr(m.tool_calls)) {
          const call = rec(rawCall);
          const fn = rec(call.function);
          parts.push({ type: 'tool_call', id: str(call.id) ?? '', name: str(fn.name) ?? '', arguments: str(fn.arguments) ?? '' });
        }
        pushMessage(messages, 'assistant', parts);
        break;
      }
      case 'tool':
        pushToolResult(messages, { type: 'tool_result', callId: str(m.tool_call_id) ?? '', content: readContent(m.content, where) });
        break;
      default:
        throw new TranslateError(`${where}.role "${String(m.role)}" cannot be translated`);
    }
  });
  const tools = arr(body.tools).map((raw, i) => {
    const tool = rec(raw);
    if (tool.type !== 'function') throw new TranslateError(`tools[${i}]: only function tools can be sent to this model`);
    const fn = rec(tool.function);
    return {
      name: str(fn.name) ?? '',
      description: str(fn.description),
      parameters: isRecord(fn.parameters) ? fn.parameters : undefined,
      strict: bool(fn.strict),
    };
  });
  const choice = rec(body.tool_choice);
  const allowed = rec(choice.allowed_tools);
  const selection =
    choice.type === 'allowed_tools'
      ? restrictToAllowed(tools, allowed.mode, arr(allowed.tools).map((t) => str(rec(rec(t).function).name)))
      : { tools, toolChoice: readToolChoice(body.tool_choice) };
  return {
    // OpenAI's search runs on OpenAI's servers: another provider cannot run it (docs/hosted-tools.md).
    removedTools: body.web_search_options === undefined || body.web_search_options === null ? [] : ['web_search_options'],
    system: system.filter((s) => s !== ''),
    messages,
    ...selection,
    parallelToolCalls: bool(body.parallel_tool_calls),
    maxOutputTokens: num(body.max_completion_tokens) ?? num(body.max_tokens),
    temperature: num(body.temperature),
    topP: num(body.top_p),
    stop: strList(body.stop),
    seed: num(body.seed),
    presencePenalty: num(body.presence_penalty),
    frequencyPenalty: num(body.frequency_penalty),
    responseFormat: readResponseFormat(body.response_format),
    reasoningEffort: str(body.reasoning_effort),
  };
}

function writeContentPart(part: TextPart | ImagePart): Json {
  if (part.type === 'text') return { type: 'text', text: part.text };
  return { type: 'image_url', image_url: compact({ url: imageUrl(part.source), detail: part.detail }) };
}

/** A single text stays a plain string, the form every chat-compatible server accepts. */
function writeContent(parts: Array<TextPart | ImagePart>): unknown {
  const only = parts[0];
  if (parts.length === 1 && only?.type === 'text') return only.text;
  return parts.map(writeContentPart);
}

/**
 * A tool message holds text only, so images of a tool result follow it in a user message; chat has
 * one message per result where the other dialects group them.
 */
function writeToolResults(results: ToolResultPart[], out: Json[]): void {
  const images: ImagePart[] = [];
  for (const result of results) {
    // Several text parts stay parts (a tool message takes an array of them), not one run-together string.
    const texts = result.content.flatMap((p) => (p.type === 'text' ? [{ type: 'text', text: p.text }] : []));
    out.push({ role: 'tool', tool_call_id: result.callId, content: texts.length > 1 ? texts : joinText(result.content) });
    for (const part of result.content) if (part.type === 'image') images.push(part);
  }
  if (images.length > 0) out.push({ role: 'user', content: images.map(writeContentPart) });
}

function writeMessages(req: IrRequest): Json[] {
  const out: Json[] = req.system.map((text) => ({ role: 'system', content: text }));
  for (const message of req.messages) {
    if (message.role === 'system') {
      out.push({ role: 'system', content: joinText(message.parts) });
      continue;
    }
    if (message.role === 'assistant') {
      const calls = message.parts.flatMap((p) =>
        p.type === 'tool_call' ? [{ id: p.id, type: 'function', function: { name: p.name, arguments: p.arguments } }] : [],
      );
      const text = joinText(message.parts);
      out.push(compact({ role: 'assistant', content: text === '' ? null : text, tool_calls: calls.length > 0 ? calls : undefined }));
      continue;
    }
    const { results, rest } = resultsFirst(message.parts);
    writeToolResults(results, out);
    const content = rest.filter((p): p is TextPart | ImagePart => p.type === 'text' || p.type === 'image');
    if (content.length > 0) out.push({ role: 'user', content: writeContent(content) });
  }
  return out;
}

function writeToolChoice(choice: ToolChoice | undefined): unknown {
  if (choice === undefined) return undefined;
  return choice.type === 'tool' ? { type: 'function', function: { name: choice.name } } : choice.type;
}

function writeResponseFormat(format: ResponseFormat | undefined): Json | undefined {
  if (format === undefined || format.type !== 'json_schema') return format;
  return {
    type: 'json_schema',
    json_schema: compact({ name: format.name, description: format.description, schema: format.schema, strict: format.strict }),
  };
}

function emitRequest(req: IrRequest, opts: { upstreamModel: string }): Json {
  const hasTools = req.tools.length > 0;
  return compact({
    model: opts.upstreamModel,
    messages: writeMessages(req),
    tools: hasTools
      ? req.tools.map((t) => ({
          type: 'function',
          function: compact({ name: t.name, description: t.description, parameters: t.parameters, strict: t.strict }),
        }))
      : undefined,
    // Servers reject tool_choice / parallel_tool_calls without tools.
    tool_choice: hasTools ? writeToolChoice(req.toolChoice) : undefined,
    parallel_tool_calls: hasTools ? req.parallelToolCalls : undefined,
    // The current name: OpenAI's reasoning models reject `max_tokens`.
    max_completion_tokens: req.maxOutputTokens,
    temperature: req.temperature,
    top_p: req.topP,
    stop: req.stop,
    seed: req.seed,
    presence_penalty: req.presencePenalty,
    frequency_penalty: req.frequencyPenalty,
    response_format: writeResponseFormat(req.responseFormat),
    reasoning_effort: req.reasoningEffort,
  });
}

// ---------------------------------------------------------------------------------------------
// Responses

function parseResponse(body: Json): IrResponse {
  const choice = rec(arr(body.choices)[0]);
  const message = rec(choice.message);
  const parts: IrResponse['parts'] = [];
  const text = typeof message.content === 'string' ? message.content : joinText(readContent(message.content, 'message'));
  parts.push(...textPart(text !== '' ? text : (str(message.refusal) ?? '')));
  for (const raw of arr(message.tool_calls)) {
    const call = rec(raw);
    const fn = rec(call.function);
    parts.push({ type: 'tool_call', id: str(call.id) ?? '', name: str(fn.name) ?? '', arguments: str(fn.arguments) ?? '' });
  }
  const usage = readChatUsage(body.usage);
  const stopReason = readStopReason('chat', str(choice.finish_reason), parts.some((p) => p.type === 'tool_call'));
  return usage === undefined ? { parts, stopReason } : { parts, stopReason, usage };
}

function emitResponse(res: IrResponse, ctx: ResponseContext): Json {
  const text = joinText(res.parts);
  const calls = res.parts.flatMap((p) =>
    p.type === 'tool_call' ? [{ id: p.id, type: 'function', function: { name: p.name, arguments: p.arguments } }] : [],
  );
  return compact({
    id: ctx.id,
    object: 'chat.completion',
    created: ctx.created,
    model: ctx.model,
    choices: [
      {
        index: 0,
        message: compact({
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          tool_calls: calls.length > 0 ? calls : undefined,
        }),
        logprobs: null,
        finish_reason: STOP_TO_WIRE[res.stopReason].chat,
      },
    ],
    usage: res.usage === undefined ? undefined : writeChatUsage(res.usage),
  });
}

// ---------------------------------------------------------------------------------------------
// Streams

/** A streamed tool call and the argument text received for it so far. */
interface StreamedCall {
  id: string;
  name: string;
  args: string;
}

/** Arguments that are a whole JSON object or array: any further text would break them. */
function complete(args: string): boolean {
  try {
    const value: unknown = JSON.parse(args);
    return typeof value === 'object' && value !== null;
  } catch {
    return false;
  }
}

/**
 * Chunks → neutral events. The finish waits for the usage chunk that OpenAI sends after the chunk
 * with `finish_reason` (its `choices` empty: the last chunk before `[DONE]`), or else for `[DONE]`
 * or the stream's end. Finishing at the usage chunk lets the caller bill while the provider's
 * stream closes.
 *
 * Tool-call deltas are keyed by chat `index` and may interleave (parallel calls, some servers).
 * Neutral blocks may not, so a call that opens while the open call's arguments are incomplete is
 * held back with its arguments, and emitted whole (then live) once the calls before it are complete,
 * at the latest at the finish. Calls streamed one after another pass through live.
 */
function createStreamParser(): StreamParser {
  let started = false;
  let done = false;
  let nextIndex = 0;
  let open: { index: number; call?: StreamedCall } | undefined;
  /** Current call per chat tool index; a new id at a known index is a new call (servers that omit `index`). */
  const calls = new Map<number, StreamedCall>();
  /** Calls waiting for the open call to complete, in the order they opened. */
  const held: StreamedCall[] = [];
  let finishReason: string | undefined;
  let usage: Usage | undefined;

  function closeOpen(out: StreamEvent[]): void {
    if (open !== undefined) out.push({ type: 'block_stop', index: open.index });
    open = undefined;
  }

  function startCall(call: StreamedCall, out: StreamEvent[]): void {
    closeOpen(out);
    open = { index: nextIndex++, call };
    out.push({ type: 'block_start', index: open.index, block: { type: 'tool_call', id: call.id, name: call.name } });
    if (call.args !== '') out.push({ type: 'tool_args_delta', index: open.index, json: call.args });
  }

  /** Emits the held calls whose predecessors are complete. */
  function release(out: StreamEvent[]): void {
    while (held.length > 0 && (open?.call === undefined || complete(open.call.args))) startCall(held.shift()!, out);
  }

  /** Emits all held calls, once none of them can change. */
  function releaseAll(out: StreamEvent[]): void {
    for (const call of held.splice(0)) startCall(call, out);
  }

  function finish(): StreamEvent[] {
    const out: StreamEvent[] = [];
    releaseAll(out);
    closeOpen(out);
    done = true;
    const stopReason = readStopReason('chat', finishReason, calls.size > 0);
    out.push(usage === undefined ? { type: 'finish', stopReason } : { type: 'finish', stopReason, usage });
    return out;
  }

  return {
    push(event: SseEvent): StreamEvent[] {
      if (done) return [];
      if (event.data === '[DONE]') return finish();
      const chunk = rec(event.data);
      if (isRecord(chunk.error)) {
        done = true;
        return [{ type: 'error', message: str(chunk.error.message) ?? 'upstream stream error', code: 'upstream_error' }];
      }
      const out: StreamEvent[] = [];
      if (!started) {
        started = true;
        out.push({ type: 'start' });
      }
      const chunkUsage = readChatUsage(chunk.usage);
      usage = chunkUsage ?? usage;
      if (chunkUsage !== undefined && finishReason !== undefined && Array.isArray(chunk.choices) && chunk.choices.length === 0) return [...out, ...finish()];
      for (const rawChoice of arr(chunk.choices)) {
        const choice = rec(rawChoice);
        if ((num(choice.index) ?? 0) !== 0) continue;
        const delta = rec(choice.delta);
        const text = (str(delta.content) ?? '') + (str(delta.refusal) ?? '');
        if (text !== '') {
          // Text after the calls: they are done.
          releaseAll(out);
          if (open === undefined || open.call !== undefined) {
            closeOpen(out);
            open = { index: nextIndex++ };
            out.push({ type: 'block_start', index: open.index, block: { type: 'text' } });
          }
          out.push({ type: 'text_delta', index: open.index, text });
        }
        for (const rawCall of arr(delta.tool_calls)) {
          const call = rec(rawCall);
          const tool = num(call.index) ?? 0;
          const fn = rec(call.function);
          const id = str(call.id);
          let current = calls.get(tool);
          if (current === undefined || (id !== undefined && id !== current.id)) {
            current = { id: id ?? `call_${tool}`, name: str(fn.name) ?? '', args: '' };
            calls.set(tool, current);
            if (held.length > 0 || (open?.call !== undefined && !complete(open.call.args))) held.push(current);
            else startCall(current, out);
          }
          const args = str(fn.arguments) ?? '';
          current.args += args;
          if (args !== '' && open?.call === current) out.push({ type: 'tool_args_delta', index: open.index, json: args });
          release(out);
        }
        finishReason = str(choice.finish_reason) ?? finishReason;
      }
      return out;
    },
    end(): StreamEvent[] {
      if (done) return [];
      if (finishReason !== undefined) return finish();
      done = true;
      return [{ type: 'error', message: 'upstream stream ended before it finished', code: 'upstream_error' }];
    },
    usage: () => usage,
  };
}

function errorEvents(failure: StreamFailure): OutputEvent[] {
  return [{ data: { error: { message: failure.message, type: 'server_error', code: failure.code ?? null } } }];
}

/** Neutral events → chunks, ending with finish chunk, usage chunk (empty `choices`), `[DONE]`. */
function createStreamEmitter(ctx: ResponseContext): StreamEmitter {
  let started = false;
  let closed = false;
  const toolIndex = new Map<number, number>();

  const chunk = (delta: Json, finishReason: string | null = null): OutputEvent => ({
    data: {
      id: ctx.id,
      object: 'chat.completion.chunk',
      created: ctx.created,
      model: ctx.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    },
  });

  function finish(stopReason: StopReason, usage: Usage | undefined): OutputEvent[] {
    const usageChunk = {
      id: ctx.id,
      object: 'chat.completion.chunk',
      created: ctx.created,
      model: ctx.model,
      choices: [],
      usage: usage === undefined ? null : writeChatUsage(usage),
    };
    return [chunk({}, STOP_TO_WIRE[stopReason].chat), { data: usageChunk, carriesUsage: true }, { data: '[DONE]' }];
  }

  /**
   * The role, in the first chunk only: with `content` null when the answer opens with a tool call,
   * as OpenAI streams it (and as the complete answer has it), else an empty string.
   */
  function opening(toolCall: boolean): Json {
    if (started) return {};
    started = true;
    return { role: 'assistant', content: toolCall ? null : '' };
  }

  return {
    push(event: StreamEvent): OutputEvent[] {
      if (closed) return [];
      const out: OutputEvent[] = [];
      // Reasoning has no place in chat: its blocks are not shown, and do not open the answer.
      const opensWithText = (event.type === 'block_start' && event.block.type === 'text') || event.type === 'text_delta' || event.type === 'finish';
      if (!started && opensWithText) {
        out.push(chunk(opening(false)));
      }
      switch (event.type) {
        case 'block_start':
          if (event.block.type === 'tool_call') {
            const index = toolIndex.size;
            toolIndex.set(event.index, index);
            const call = { index, id: event.block.id, type: 'function', function: { name: event.block.name, arguments: '' } };
            out.push(chunk({ ...opening(true), tool_calls: [call] }));
          }
          break;
        case 'text_delta':
          out.push(chunk({ content: event.text }));
          break;
        case 'tool_args_delta':
          out.push(chunk({ tool_calls: [{ index: toolIndex.get(event.index) ?? 0, function: { arguments: event.json } }] }));
          break;
        case 'finish':
          closed = true;
          out.push(...finish(event.stopReason, event.usage));
          break;
        case 'error':
          closed = true;
          out.push(...errorEvents(event));
          break;
        case 'start':
        case 'block_stop':
        case 'reasoning_delta':
        case 'reasoning_signature':
          break;
      }
      return out;
    },
    end: () => [],
  };
}

export const chat: Codec = {
  parseRequest,
  emitRequest,
  parseResponse,
  emitResponse,
  readUsage: (body) => readChatUsage(body.usage),
  createStreamParser,
  createStreamEmitter,
  errorEvents,
};
