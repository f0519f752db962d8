/** Anthropic messages (`/v1/messages`). */
import { TranslateError } from '../errors.ts';
import type {
  Codec,
  ImagePart,
  ImageSource,
  IrRequest,
  IrResponse,
  Message,
  OutputEvent,
  Part,
  ReasoningPart,
  RequestOptions,
  ResponseContext,
  ResponseFormat,
  SseEvent,
  StreamEmitter,
  StreamEvent,
  StreamFailure,
  StreamParser,
  TextPart,
  ToolChoice,
  Usage,
} from '../ir.ts';
import { arr, bool, compact, isRecord, num, parseArgs, rec, str, strList, type Json } from '../json.ts';
import { readStopReason, STOP_TO_WIRE } from '../stop-reasons.ts';
import { readMessagesUsage, writeMessagesUsage } from '../usage.ts';
import { hostedToolLabel } from '../hosted-tools.ts';
import { openReasoning, sealReasoning } from '../reasoning.ts';
import { joinText, pushMessage, refuseServerFeatures, resultsFirst, textPart } from './common.ts';

/** Used when the request names no output cap: the messages protocol requires one. */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * Blocks dropped in translation, never an error: the record of what Anthropic's server tools did
 * (a call and its result, already told in the answer's text; the tools themselves are not sent to
 * another provider, see docs/hosted-tools.md).
 */
function droppedBlock(type: string): boolean {
  return (
    type === 'server_tool_use' ||
    type === 'mcp_tool_use' ||
    type === 'container_upload' ||
    (type.endsWith('_tool_result') && type !== 'tool_result')
  );
}

/** A tool search's result lists tools by reference: nothing to another provider, whose tools are all sent. */
const TOOL_REFERENCE = 'tool_reference';

// ---------------------------------------------------------------------------------------------
// Requests

function readImage(block: Json): ImagePart {
  const source = rec(block.source);
  if (source.type === 'base64') {
    return { type: 'image', source: { kind: 'base64', mediaType: str(source.media_type) ?? 'image/png', data: str(source.data) ?? '' } };
  }
  if (source.type === 'url') return { type: 'image', source: { kind: 'url', url: str(source.url) ?? '' } };
  throw new TranslateError(`image source type "${String(source.type)}" cannot be sent to this model`);
}

/** Text and image blocks, as in a tool result's content. */
function readSimpleContent(content: unknown, where: string): Array<TextPart | ImagePart> {
  if (typeof content === 'string') return textPart(content);
  const parts: Array<TextPart | ImagePart> = [];
  for (const raw of arr(content)) {
    const block = rec(raw);
    if (block.type === 'text') parts.push(...textPart(str(block.text) ?? ''));
    else if (block.type === 'image') parts.push(readImage(block));
    else if (block.type === TOOL_REFERENCE) continue;
    else throw new TranslateError(`${where}: content block type "${String(block.type)}" cannot be sent to this model`);
  }
  return parts;
}

/** A system turn's text blocks: the instruction it gives. */
function readSystemTurn(content: unknown, where: string): TextPart[] {
  return readSimpleContent(
    typeof content === 'string' ? content : arr(content).filter((b) => rec(b).type === 'text'),
    where,
  ).filter((p): p is TextPart => p.type === 'text');
}

/**
 * A thinking block as reasoning: Anthropic's own (its signature goes back only to Anthropic), or
 * another provider's carried in the signature field (reasoning.ts).
 */
function readThinking(block: Json, fromClient: boolean): ReasoningPart {
  if (block.type === 'redacted_thinking') return { type: 'reasoning', text: '', signature: str(block.data) ?? '', source: 'messages', redacted: true };
  const text = str(block.thinking) ?? '';
  const signature = str(block.signature) ?? '';
  return (fromClient ? openReasoning(signature, text) : undefined) ?? { type: 'reasoning', text, signature, source: 'messages' };
}

/** A reasoning part as a thinking block for a messages client: Anthropic's as it came, another provider's sealed. */
function thinkingBlock(part: ReasoningPart): Json | undefined {
  if (part.source === 'messages' && part.signature !== undefined) {
    return part.redacted ? { type: 'redacted_thinking', data: part.signature } : { type: 'thinking', thinking: part.text, signature: part.signature };
  }
  if (part.redacted) return undefined;
  return { type: 'thinking', thinking: part.text, signature: sealReasoning(part) ?? '' };
}

function readContent(content: unknown, where: string): Part[] {
  if (typeof content === 'string') return textPart(content);
  const parts: Part[] = [];
  arr(content).forEach((raw, j) => {
    const block = rec(raw);
    const at = `${where}.content[${j}]`;
    switch (block.type) {
      case 'tool_use':
        parts.push({ type: 'tool_call', id: str(block.id) ?? '', name: str(block.name) ?? '', arguments: JSON.stringify(block.input ?? {}) });
        break;
      case 'tool_result':
        parts.push({
          type: 'tool_result',
          callId: str(block.tool_use_id) ?? '',
          content: readSimpleContent(block.content, at),
          isError: bool(block.is_error),
        });
        break;
      case 'thinking':
      case 'redacted_thinking':
        parts.push(readThinking(block, true));
        break;
      default:
        if (!droppedBlock(String(block.type))) parts.push(...readSimpleContent([block], at));
    }
  });
  return parts;
}

function readToolChoice(value: unknown): { choice?: ToolChoice; parallel?: boolean } {
  if (!isRecord(value)) return {};
  const parallel = value.disable_parallel_tool_use === true ? false : undefined;
  switch (value.type) {
    case 'auto':
    case 'none':
      return { choice: { type: value.type }, parallel };
    case 'any':
      return { choice: { type: 'required' }, parallel };
    case 'tool':
      return { choice: { type: 'tool', name: str(value.name) ?? '' }, parallel };
    default:
      return {};
  }
}

/** What the messages SDK reads to continue without server-held threads (its `continue_unthreaded`). */
const THREAD_UNSUPPORTED = { error_code: 'thread_unsupported_request', unsupported: ['thread'] };

/**
 * Structured output (`output_config.format`): Anthropic takes a JSON schema only, so a chat or
 * responses `json_object` has no counterpart and is not sent (README: what translation drops).
 */
function readOutputFormat(config: unknown): ResponseFormat | undefined {
  const format = rec(rec(config).format);
  return format.type === 'json_schema' ? { type: 'json_schema', name: 'response', schema: rec(format.schema) } : undefined;
}

function writeOutputFormat(format: ResponseFormat | undefined): Json | undefined {
  return format?.type === 'json_schema' ? { format: { type: 'json_schema', schema: format.schema } } : undefined;
}

function parseRequest(body: Json): IrRequest {
  // A thread is conversation history the provider's servers keep; another provider has none of it.
  if (body.thread !== undefined && body.thread !== null) {
    throw new TranslateError('thread refers to a conversation stored by Anthropic and cannot be sent to this model; send the whole conversation in messages', THREAD_UNSUPPORTED);
  }
  refuseServerFeatures(body, ['mcp_servers', 'container']);
  const system =
    typeof body.system === 'string' ? textPart(body.system).map((p) => p.text) : arr(body.system).flatMap((b) => str(rec(b).text) ?? []);
  const messages: Message[] = [];
  arr(body.messages).forEach((raw, i) => {
    const m = rec(raw);
    const where = `messages[${i}]`;
    // A system turn stays an instruction in its place: never the user's words.
    if (m.role === 'system') pushMessage(messages, 'system', readSystemTurn(m.content, where));
    else pushMessage(messages, m.role === 'assistant' ? 'assistant' : 'user', readContent(m.content, where));
  });
  const removedTools: string[] = [];
  const tools = arr(body.tools).flatMap((raw) => {
    const tool = rec(raw);
    // Typed entries other than `custom` are Anthropic's server tools (web search, tool search,
    // code execution…): another provider cannot run them, so they are not sent. `defer_loading`
    // means nothing elsewhere: a deferred tool is sent like any other.
    if (tool.type !== undefined && tool.type !== 'custom') {
      removedTools.push(hostedToolLabel('messages', tool));
      return [];
    }
    return [{ name: str(tool.name) ?? '', description: str(tool.description), parameters: isRecord(tool.input_schema) ? tool.input_schema : undefined }];
  });
  const { choice: read, parallel } = readToolChoice(body.tool_choice);
  // A choice of a removed tool cannot be kept.
  const choice = read?.type === 'tool' && !tools.some((t) => t.name === read.name) ? undefined : read;
  return {
    removedTools,
    system: system.filter((s) => s !== ''),
    messages,
    tools,
    toolChoice: choice,
    parallelToolCalls: parallel,
    maxOutputTokens: num(body.max_tokens),
    temperature: num(body.temperature),
    topP: num(body.top_p),
    topK: num(body.top_k),
    stop: strList(body.stop_sequences),
    responseFormat: readOutputFormat(body.output_config),
  };
}

function writeImageSource(source: ImageSource): Json {
  return source.kind === 'base64'
    ? { type: 'base64', media_type: source.mediaType, data: source.data }
    : { type: 'url', url: source.url };
}

/** A block of a request or an answer; undefined for reasoning that cannot be said here. */
function writeBlock(part: Part): Json | undefined {
  switch (part.type) {
    case 'reasoning':
      return thinkingBlock(part);
    case 'text':
      return { type: 'text', text: part.text };
    case 'image':
      return { type: 'image', source: writeImageSource(part.source) };
    case 'tool_call':
      return { type: 'tool_use', id: part.id, name: part.name, input: parseArgs(part.arguments) };
    case 'tool_result': {
      const only = part.content[0];
      const content =
        part.content.length === 1 && only?.type === 'text' ? only.text : part.content.length === 0 ? undefined : part.content.flatMap((p) => writeBlock(p) ?? []);
      return compact({ type: 'tool_result', tool_use_id: part.callId, content, is_error: part.isError === true ? true : undefined });
    }
  }
}

function writeMessage(message: Message): Json {
  if (message.role === 'system') return { role: 'system', content: joinText(message.parts) };
  const { results, rest } = resultsFirst(message.parts);
  // Reasoning goes to Anthropic only when Anthropic made and signed it (its signature is checked).
  const parts = [...results, ...rest].filter((p) => p.type !== 'reasoning' || (p.source === 'messages' && (p.signature ?? '') !== ''));
  const only = parts[0];
  const content = parts.length === 1 && only?.type === 'text' ? only.text : parts.flatMap((p) => writeBlock(p) ?? []);
  return { role: message.role, content };
}

function writeToolChoice(req: IrRequest): Json | undefined {
  const disable = req.parallelToolCalls === false ? true : undefined;
  const choice = req.toolChoice ?? (disable ? { type: 'auto' as const } : undefined);
  if (choice === undefined) return undefined;
  switch (choice.type) {
    case 'none':
      return { type: 'none' };
    case 'required':
      return compact({ type: 'any', disable_parallel_tool_use: disable });
    case 'tool':
      return compact({ type: 'tool', name: choice.name, disable_parallel_tool_use: disable });
    case 'auto':
      return compact({ type: 'auto', disable_parallel_tool_use: disable });
  }
}

function emitRequest(req: IrRequest, opts: RequestOptions): Json {
  const hasTools = req.tools.length > 0;
  return compact({
    model: opts.upstreamModel,
    max_tokens: req.maxOutputTokens ?? opts.defaultMaxOutputTokens ?? DEFAULT_MAX_TOKENS,
    system: req.system.length === 0 ? undefined : req.system.length === 1 ? req.system[0] : req.system.map((text) => ({ type: 'text', text })),
    messages: req.messages.map(writeMessage),
    tools: hasTools
      ? req.tools.map((t) => compact({ name: t.name, description: t.description, input_schema: t.parameters ?? { type: 'object', properties: {} } }))
      : undefined,
    tool_choice: hasTools ? writeToolChoice(req) : undefined,
    // The messages protocol caps temperature at 1 where OpenAI allows 2.
    temperature: req.temperature === undefined ? undefined : Math.min(1, req.temperature),
    top_p: req.topP,
    top_k: req.topK,
    stop_sequences: req.stop,
    output_config: writeOutputFormat(req.responseFormat),
  });
}

// ---------------------------------------------------------------------------------------------
// Responses

function parseResponse(body: Json): IrResponse {
  const parts: IrResponse['parts'] = [];
  for (const raw of arr(body.content)) {
    const block = rec(raw);
    if (block.type === 'text') parts.push(...textPart(str(block.text) ?? ''));
    else if (block.type === 'thinking' || block.type === 'redacted_thinking') parts.push(readThinking(block, false));
    else if (block.type === 'tool_use') {
      parts.push({ type: 'tool_call', id: str(block.id) ?? '', name: str(block.name) ?? '', arguments: JSON.stringify(block.input ?? {}) });
    }
  }
  const usage = readMessagesUsage(body.usage);
  const stopReason = readStopReason('messages', str(body.stop_reason), false);
  return usage === undefined ? { parts, stopReason } : { parts, stopReason, usage };
}

const ZERO_USAGE = { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 };

function emitResponse(res: IrResponse, ctx: ResponseContext): Json {
  return {
    id: ctx.id,
    type: 'message',
    role: 'assistant',
    model: ctx.model,
    content: res.parts.flatMap((p) => writeBlock(p) ?? []),
    stop_reason: STOP_TO_WIRE[res.stopReason].messages,
    stop_sequence: null,
    // The protocol requires `usage`; zeros when the upstream reported none (see `extractUsage`).
    usage: res.usage === undefined ? ZERO_USAGE : writeMessagesUsage(res.usage),
  };
}

// ---------------------------------------------------------------------------------------------
// Streams

function createStreamParser(): StreamParser {
  let done = false;
  let nextIndex = 0;
  /** Wire block index → neutral index; null for skipped (reasoning, server tool) blocks. */
  const blocks = new Map<number, number | null>();
  /** Usage fields as reported so far: message_start has input, message_delta the final counts. */
  const usageFields: Json = {};
  let stopReason: string | undefined;

  const usage = (): Usage | undefined => readMessagesUsage(usageFields);
  const mergeUsage = (value: unknown): void => {
    for (const [key, n] of Object.entries(rec(value))) if (typeof n === 'number') usageFields[key] = n;
  };
  function finish(): StreamEvent[] {
    done = true;
    const u = usage();
    const reason = readStopReason('messages', stopReason, false);
    return [u === undefined ? { type: 'finish', stopReason: reason } : { type: 'finish', stopReason: reason, usage: u }];
  }

  return {
    push(event: SseEvent): StreamEvent[] {
      if (done) return [];
      const data = rec(event.data);
      const wireIndex = num(data.index) ?? 0;
      const index = blocks.get(wireIndex);
      switch (data.type) {
        case 'message_start':
          mergeUsage(rec(data.message).usage);
          return [{ type: 'start' }];
        case 'content_block_start': {
          const block = rec(data.content_block);
          if (block.type !== 'text' && block.type !== 'tool_use' && block.type !== 'thinking' && block.type !== 'redacted_thinking') {
            blocks.set(wireIndex, null);
            return [];
          }
          const at = nextIndex++;
          blocks.set(wireIndex, at);
          if (block.type === 'thinking' || block.type === 'redacted_thinking') {
            const out: StreamEvent[] = [{ type: 'block_start', index: at, block: { type: 'reasoning' } }];
            const text = str(block.thinking) ?? '';
            if (text !== '') out.push({ type: 'reasoning_delta', index: at, text });
            const signature = str(block.type === 'thinking' ? block.signature : block.data) ?? '';
            if (signature !== '') {
              const redacted = block.type === 'redacted_thinking' ? { redacted: true as const } : {};
              out.push({ type: 'reasoning_signature', index: at, signature, source: 'messages', ...redacted });
            }
            return out;
          }
          if (block.type === 'text') {
            const text = str(block.text) ?? '';
            const out: StreamEvent[] = [{ type: 'block_start', index: at, block: { type: 'text' } }];
            if (text !== '') out.push({ type: 'text_delta', index: at, text });
            return out;
          }
          const out: StreamEvent[] = [{ type: 'block_start', index: at, block: { type: 'tool_call', id: str(block.id) ?? '', name: str(block.name) ?? '' } }];
          if (Object.keys(rec(block.input)).length > 0) out.push({ type: 'tool_args_delta', index: at, json: JSON.stringify(block.input) });
          return out;
        }
        case 'content_block_delta': {
          if (index === undefined || index === null) return [];
          const delta = rec(data.delta);
          const text = str(delta.text);
          if (delta.type === 'text_delta' && text) return [{ type: 'text_delta', index, text }];
          const json = str(delta.partial_json);
          if (delta.type === 'input_json_delta' && json) return [{ type: 'tool_args_delta', index, json }];
          const thinking = str(delta.thinking);
          if (delta.type === 'thinking_delta' && thinking) return [{ type: 'reasoning_delta', index, text: thinking }];
          const signature = str(delta.signature);
          if (delta.type === 'signature_delta' && signature) return [{ type: 'reasoning_signature', index, signature, source: 'messages' }];
          return [];
        }
        case 'content_block_stop':
          return index === undefined || index === null ? [] : [{ type: 'block_stop', index }];
        case 'message_delta':
          stopReason = str(rec(data.delta).stop_reason) ?? stopReason;
          mergeUsage(data.usage);
          return [];
        case 'message_stop':
          return finish();
        case 'error':
          done = true;
          return [{ type: 'error', message: str(rec(data.error).message) ?? 'upstream stream error', code: 'upstream_error' }];
        default:
          return [];
      }
    },
    end(): StreamEvent[] {
      if (done) return [];
      if (stopReason !== undefined) return finish();
      done = true;
      return [{ type: 'error', message: 'upstream stream ended before it finished', code: 'upstream_error' }];
    },
    usage,
  };
}

/** The messages protocol's error type for our code (its SDK and clients branch on it); else `api_error`. */
const ERROR_TYPES: Record<string, string> = {
  invalid_request: 'invalid_request_error',
  rate_limit_exceeded: 'rate_limit_error',
  upstream_rate_limited: 'rate_limit_error',
  upstream_timeout: 'timeout_error',
};

function errorEvents(failure: StreamFailure): OutputEvent[] {
  const error = compact({ type: (failure.code && ERROR_TYPES[failure.code]) ?? 'api_error', code: failure.code, message: failure.message });
  return [{ event: 'error', data: { type: 'error', error } }];
}

const ev = (data: Json & { type: string }): OutputEvent => ({ event: data.type, data });

/** Neutral events → `message_start` … `message_delta` (stop reason + usage) → `message_stop`. */
function createStreamEmitter(ctx: ResponseContext): StreamEmitter {
  let started = false;
  let closed = false;
  const wireIndex = new Map<number, number>();
  const open = new Set<number>();

  return {
    push(event: StreamEvent): OutputEvent[] {
      if (closed) return [];
      const out: OutputEvent[] = [];
      if (!started && event.type !== 'error') {
        started = true;
        const message = {
          id: ctx.id,
          type: 'message',
          role: 'assistant',
          model: ctx.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...ZERO_USAGE, input_tokens: ctx.inputTokens ?? 0 },
        };
        out.push(ev({ type: 'message_start', message }));
      }
      switch (event.type) {
        case 'block_start': {
          const index = wireIndex.size;
          wireIndex.set(event.index, index);
          open.add(index);
          const block =
            event.block.type === 'text'
              ? { type: 'text', text: '' }
              : event.block.type === 'reasoning'
                ? { type: 'thinking', thinking: '', signature: '' }
                : { type: 'tool_use', id: event.block.id, name: event.block.name, input: {} };
          out.push(ev({ type: 'content_block_start', index, content_block: block }));
          break;
        }
        case 'reasoning_delta':
          out.push(ev({ type: 'content_block_delta', index: wireIndex.get(event.index) ?? 0, delta: { type: 'thinking_delta', thinking: event.text } }));
          break;
        case 'reasoning_signature': {
          // Another provider's proof travels sealed in the signature (reasoning.ts).
          const { source, redacted } = event;
          const signature = redacted ? undefined : source === 'messages' ? event.signature : sealReasoning({ type: 'reasoning', text: '', signature: event.signature, source });
          if (signature !== undefined) out.push(ev({ type: 'content_block_delta', index: wireIndex.get(event.index) ?? 0, delta: { type: 'signature_delta', signature } }));
          break;
        }
        case 'text_delta':
          out.push(ev({ type: 'content_block_delta', index: wireIndex.get(event.index) ?? 0, delta: { type: 'text_delta', text: event.text } }));
          break;
        case 'tool_args_delta': {
          const delta = { type: 'input_json_delta', partial_json: event.json };
          out.push(ev({ type: 'content_block_delta', index: wireIndex.get(event.index) ?? 0, delta }));
          break;
        }
        case 'block_stop': {
          const index = wireIndex.get(event.index) ?? 0;
          open.delete(index);
          out.push(ev({ type: 'content_block_stop', index }));
          break;
        }
        case 'finish': {
          closed = true;
          for (const index of open) out.push(ev({ type: 'content_block_stop', index }));
          const delta = { stop_reason: STOP_TO_WIRE[event.stopReason].messages, stop_sequence: null };
          const usage = event.usage === undefined ? ZERO_USAGE : writeMessagesUsage(event.usage);
          out.push({ ...ev({ type: 'message_delta', delta, usage }), carriesUsage: true }, ev({ type: 'message_stop' }));
          break;
        }
        case 'error':
          closed = true;
          out.push(...errorEvents(event));
          break;
        case 'start':
          break;
      }
      return out;
    },
    end: () => [],
  };
}

export const messages: Codec = {
  parseRequest,
  emitRequest,
  parseResponse,
  emitResponse,
  readUsage: (body) => readMessagesUsage(body.usage),
  createStreamParser,
  createStreamEmitter,
  errorEvents,
};
