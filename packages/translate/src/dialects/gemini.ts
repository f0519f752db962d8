/**
 * Google Gemini `generateContent` / `streamGenerateContent?alt=sse`. The model is part of the URL,
 * never of the body. Function calls carry no ids: ids are synthesized, and results are matched to
 * calls by function name.
 */
import { TranslateError } from '../errors.ts';
import { mediaTypeOf } from '../images.ts';
import type {
  Codec,
  ImagePart,
  IrRequest,
  IrResponse,
  Message,
  OutputEvent,
  Part,
  RequestOptions,
  ResponseContext,
  ResponseFormat,
  SseEvent,
  StreamEmitter,
  StreamEvent,
  StreamFailure,
  StreamParser,
  ToolChoice,
  ToolResultPart,
  Usage,
} from '../ir.ts';
import { arr, compact, isRecord, num, parseArgs, rec, str, strList, type Json } from '../json.ts';
import { readStopReason, STOP_TO_WIRE } from '../stop-reasons.ts';
import { readGeminiUsage, writeGeminiUsage } from '../usage.ts';
import { joinText, pushMessage, synthesizedCallId, textPart } from './common.ts';

// ---------------------------------------------------------------------------------------------
// Requests

function readMedia(data: Json, where: string): ImagePart {
  const mediaType = str(data.mimeType) ?? '';
  if (!mediaType.startsWith('image/')) throw new TranslateError(`${where}: media type "${mediaType}" cannot be sent to this model`);
  if (typeof data.fileUri === 'string') return { type: 'image', source: { kind: 'url', url: data.fileUri, mediaType } };
  return { type: 'image', source: { kind: 'base64', mediaType, data: str(data.data) ?? '' } };
}

/**
 * A function response object as text. `{output}` / `{error}` (the documented convention, and what
 * {@link writeFunctionResponse} emits) unwrap to their value; anything else is kept as JSON.
 */
function readFunctionResponse(response: unknown): { text: string; isError: boolean } {
  const obj = rec(response);
  const keys = Object.keys(obj);
  const only = keys.length === 1 ? keys[0] : undefined;
  if (only === 'output' || only === 'error') {
    const value = obj[only];
    return { text: typeof value === 'string' ? value : JSON.stringify(value), isError: only === 'error' };
  }
  return { text: JSON.stringify(obj), isError: false };
}

function writeFunctionResponse(result: ToolResultPart): Json {
  // Several text parts, one per line: not run together.
  const text = result.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
  return result.isError === true ? { error: text } : { output: text };
}

function parseRequest(body: Json): IrRequest {
  const system = arr(rec(body.systemInstruction).parts).flatMap((p) => textPart(str(rec(p).text) ?? '').map((t) => t.text));
  const messages: Message[] = [];
  /** Calls not yet answered, per function name, oldest first: results are matched by name. */
  const pending = new Map<string, string[]>();
  let calls = 0;
  arr(body.contents).forEach((raw, i) => {
    const content = rec(raw);
    const parts: Part[] = [];
    arr(content.parts).forEach((rawPart, j) => {
      const part = rec(rawPart);
      const where = `contents[${i}].parts[${j}]`;
      if (part.thought === true) return;
      if (typeof part.text === 'string') parts.push(...textPart(part.text));
      else if (isRecord(part.inlineData)) parts.push(readMedia(part.inlineData, where));
      else if (isRecord(part.fileData)) parts.push(readMedia(part.fileData, where));
      else if (isRecord(part.functionCall)) {
        const name = str(part.functionCall.name) ?? '';
        const id = str(part.functionCall.id) ?? `call_${calls}`;
        calls += 1;
        pending.set(name, [...(pending.get(name) ?? []), id]);
        parts.push({ type: 'tool_call', id, name, arguments: JSON.stringify(part.functionCall.args ?? {}) });
      } else if (isRecord(part.functionResponse)) {
        const name = str(part.functionResponse.name) ?? '';
        const queue = pending.get(name) ?? [];
        const callId = str(part.functionResponse.id) ?? queue.shift() ?? `call_${name}`;
        const { text, isError } = readFunctionResponse(part.functionResponse.response);
        parts.push({ type: 'tool_result', callId, name, content: textPart(text), isError: isError || undefined });
      } else throw new TranslateError(`${where}: this part kind cannot be sent to this model`);
    });
    pushMessage(messages, content.role === 'model' ? 'assistant' : 'user', parts);
  });
  const tools = arr(body.tools).flatMap((raw, i) => {
    const tool = rec(raw);
    if (!Array.isArray(tool.functionDeclarations)) throw new TranslateError(`tools[${i}]: only function declarations can be sent to this model`);
    return tool.functionDeclarations.map((d) => {
      const decl = rec(d);
      const parameters = isRecord(decl.parametersJsonSchema) ? decl.parametersJsonSchema : isRecord(decl.parameters) ? decl.parameters : undefined;
      return { name: str(decl.name) ?? '', description: str(decl.description), parameters };
    });
  });
  const config = rec(body.generationConfig);
  return {
    system,
    messages,
    tools,
    toolChoice: readToolChoice(rec(rec(body.toolConfig).functionCallingConfig)),
    maxOutputTokens: num(config.maxOutputTokens),
    temperature: num(config.temperature),
    topP: num(config.topP),
    topK: num(config.topK),
    stop: strList(config.stopSequences),
    seed: num(config.seed),
    presencePenalty: num(config.presencePenalty),
    frequencyPenalty: num(config.frequencyPenalty),
    responseFormat: readResponseFormat(config),
  };
}

function readToolChoice(config: Json): ToolChoice | undefined {
  const names = arr(config.allowedFunctionNames);
  switch (config.mode) {
    case 'AUTO':
    case 'VALIDATED':
      return { type: 'auto' };
    case 'NONE':
      return { type: 'none' };
    case 'ANY':
      return names.length === 1 && typeof names[0] === 'string' ? { type: 'tool', name: names[0] } : { type: 'required' };
    default:
      return undefined;
  }
}

function readResponseFormat(config: Json): ResponseFormat | undefined {
  if (config.responseMimeType !== 'application/json') return undefined;
  const schema = isRecord(config.responseJsonSchema) ? config.responseJsonSchema : isRecord(config.responseSchema) ? config.responseSchema : undefined;
  return schema === undefined ? { type: 'json_object' } : { type: 'json_schema', name: 'response', schema };
}

function writeMedia(part: ImagePart): Json {
  const { source } = part;
  if (source.kind === 'base64') return { inlineData: { mimeType: source.mediaType, data: source.data } };
  return { fileData: { mimeType: mediaTypeOf(source), fileUri: source.url } };
}

/**
 * Gemini 3 and later reject replayed function calls without the `thoughtSignature` they were
 * returned with. Clients of other dialects carry it back in their own reasoning fields
 * (reasoning.ts); for calls that come without one (history built elsewhere) Google documents this
 * value. Older models are left alone.
 */
const SIGNATURE_SENTINEL = 'skip_thought_signature_validator';

function needsSignatures(model: string): boolean {
  const major = /(?:^|\/)gemini-(\d+)/.exec(model)?.[1];
  return major !== undefined && Number(major) >= 3;
}

/**
 * The message's parts with its tool results in the order of the calls they answer. Gemini pairs a
 * function's responses with its calls by position (our responses carry no ids), while chat and
 * messages match results by id in any order: two calls of one function answered out of order
 * would hand each result to the other call. Other parts keep their places.
 */
function resultsInCallOrder(parts: Message['parts'], callNames: Map<string, string>): Message['parts'] {
  const calls = [...callNames.keys()];
  const rank = (p: Message['parts'][number]) => (p.type === 'tool_result' ? calls.indexOf(p.callId) : -1);
  const results = parts.filter((p) => p.type === 'tool_result');
  if (results.length < 2) return parts;
  const sorted = results.toSorted((a, b) => (rank(a) === -1 ? Infinity : rank(a)) - (rank(b) === -1 ? Infinity : rank(b)));
  let next = 0;
  return parts.map((p) => (p.type === 'tool_result' ? sorted[next++]! : p));
}

function writeParts(message: Message, callNames: Map<string, string>, signed: boolean): Json[] {
  const parts: Json[] = [];
  /** A Gemini thought signature read before a call: it goes back on that call, where Gemini put it. */
  let signature: string | undefined;
  for (const part of resultsInCallOrder(message.parts, callNames)) {
    switch (part.type) {
      case 'reasoning':
        // Only Gemini's own signatures mean anything to Gemini; thought text is not sent back.
        if (part.source === 'gemini' && part.signature !== undefined && part.signature !== '') signature = part.signature;
        break;
      case 'text':
        parts.push({ text: part.text });
        break;
      case 'image':
        parts.push(writeMedia(part));
        break;
      case 'tool_call':
        callNames.set(part.id, part.name);
        {
          const thoughtSignature = signature ?? (signed ? SIGNATURE_SENTINEL : undefined);
          parts.push({ functionCall: { name: part.name, args: parseArgs(part.arguments) }, ...(thoughtSignature === undefined ? {} : { thoughtSignature }) });
          signature = undefined;
        }
        break;
      case 'tool_result': {
        const name = part.name ?? callNames.get(part.callId);
        if (name === undefined) throw new TranslateError(`tool result "${part.callId}" answers no earlier tool call`);
        parts.push({ functionResponse: { name, response: writeFunctionResponse(part) } });
        // A function response holds JSON only; its images follow it as parts of the same turn.
        for (const media of part.content) if (media.type === 'image') parts.push(writeMedia(media));
        break;
      }
    }
  }
  return parts;
}

function writeToolConfig(choice: ToolChoice | undefined): Json | undefined {
  if (choice === undefined) return undefined;
  const config =
    choice.type === 'tool'
      ? { mode: 'ANY', allowedFunctionNames: [choice.name] }
      : { mode: choice.type === 'required' ? 'ANY' : choice.type.toUpperCase() };
  return { functionCallingConfig: config };
}

function emitRequest(req: IrRequest, opts: RequestOptions): Json {
  const callNames = new Map<string, string>();
  const signed = needsSignatures(opts.upstreamModel);
  // Gemini has no instruction turns: a system turn joins the system instruction, in order.
  const system = [...req.system, ...req.messages.flatMap((m) => (m.role === 'system' ? [joinText(m.parts)] : []))];
  const contents = req.messages
    .filter((m) => m.role !== 'system')
    .map((m) => ({ role: m.role === 'assistant' ? 'model' : 'user', parts: writeParts(m, callNames, signed) }));
  const format = req.responseFormat;
  const generationConfig = compact({
    maxOutputTokens: req.maxOutputTokens,
    temperature: req.temperature,
    topP: req.topP,
    topK: req.topK,
    stopSequences: req.stop,
    seed: req.seed,
    presencePenalty: req.presencePenalty,
    frequencyPenalty: req.frequencyPenalty,
    responseMimeType: format === undefined || format.type === 'text' ? undefined : 'application/json',
    responseJsonSchema: format?.type === 'json_schema' ? format.schema : undefined,
  });
  const hasTools = req.tools.length > 0;
  return compact({
    systemInstruction: system.length > 0 ? { parts: system.map((text) => ({ text })) } : undefined,
    contents,
    // `parametersJsonSchema` takes full JSON Schema; `parameters` only an OpenAPI subset.
    tools: hasTools
      ? [{ functionDeclarations: req.tools.map((t) => compact({ name: t.name, description: t.description, parametersJsonSchema: t.parameters })) }]
      : undefined,
    toolConfig: hasTools ? writeToolConfig(req.toolChoice) : undefined,
    generationConfig: Object.keys(generationConfig).length > 0 ? generationConfig : undefined,
  });
}

// ---------------------------------------------------------------------------------------------
// Responses

function candidateOf(body: Json): Json {
  return rec(arr(body.candidates)[0]);
}

/** The wire finish reason; a prompt blocked before generation has no candidate, only feedback. */
function finishReasonOf(body: Json): string | undefined {
  const blocked = rec(body.promptFeedback).blockReason;
  return str(candidateOf(body).finishReason) ?? (blocked === undefined ? undefined : 'SAFETY');
}

function parseResponse(body: Json, ctx: ResponseContext): IrResponse {
  const parts: IrResponse['parts'] = [];
  let calls = 0;
  for (const raw of arr(rec(candidateOf(body).content).parts)) {
    const part = rec(raw);
    const last = parts.at(-1);
    if (part.thought === true) {
      const text = str(part.text) ?? '';
      if (last?.type === 'reasoning' && last.signature === undefined) last.text += text;
      else parts.push({ type: 'reasoning', text, source: 'gemini' });
      continue;
    }
    if (isRecord(part.functionCall) && typeof part.thoughtSignature === 'string') signThought(parts, part.thoughtSignature);
    if (typeof part.text === 'string' && part.text !== '') {
      // Gemini splits one text into several parts; they read as one.
      if (last?.type === 'text') last.text += part.text;
      else parts.push({ type: 'text', text: part.text });
    } else if (isRecord(part.functionCall)) {
      const id = str(part.functionCall.id) ?? synthesizedCallId(ctx, calls);
      calls += 1;
      parts.push({ type: 'tool_call', id, name: str(part.functionCall.name) ?? '', arguments: JSON.stringify(part.functionCall.args ?? {}) });
    }
  }
  const usage = readGeminiUsage(body.usageMetadata);
  const stopReason = readStopReason('gemini', finishReasonOf(body), calls > 0);
  return usage === undefined ? { parts, stopReason } : { parts, stopReason, usage };
}

/**
 * The thought a signed call closes: Gemini signs a call's thinking on the call's own part, and the
 * signature travels with the thought text before it (one reasoning part, or an empty one).
 */
function signThought(parts: IrResponse['parts'], signature: string): void {
  const last = parts.at(-1);
  if (last?.type === 'reasoning' && last.signature === undefined) last.signature = signature;
  else parts.push({ type: 'reasoning', text: '', signature, source: 'gemini' });
}

function writeOutputPart(part: IrResponse['parts'][number]): Json[] {
  switch (part.type) {
    case 'text':
      return [{ text: part.text }];
    case 'tool_call':
      return [{ functionCall: { name: part.name, args: parseArgs(part.arguments) } }];
    case 'reasoning':
      return part.text === '' ? [] : [{ text: part.text, thought: true }];
  }
}

function emitResponse(res: IrResponse, ctx: ResponseContext): Json {
  return compact({
    candidates: [{ content: { role: 'model', parts: res.parts.flatMap(writeOutputPart) }, finishReason: STOP_TO_WIRE[res.stopReason].gemini, index: 0 }],
    usageMetadata: res.usage === undefined ? undefined : writeGeminiUsage(res.usage),
    modelVersion: ctx.model,
    responseId: ctx.id,
  });
}

// ---------------------------------------------------------------------------------------------
// Streams

/**
 * Chunks → neutral events. Each chunk repeats the usage so far; the finish is only known when the
 * stream ends, so it is emitted by `end()`.
 */
function createStreamParser(ctx: ResponseContext): StreamParser {
  let started = false;
  let done = false;
  let nextIndex = 0;
  /** The open text or thought block: Gemini streams either in pieces. */
  let openText: number | undefined;
  let openThought: number | undefined;
  let calls = 0;
  let finishReason: string | undefined;
  let usage: Usage | undefined;

  function closeText(out: StreamEvent[]): void {
    if (openText !== undefined) out.push({ type: 'block_stop', index: openText });
    openText = undefined;
  }
  function closeThought(out: StreamEvent[]): void {
    if (openThought !== undefined) out.push({ type: 'block_stop', index: openThought });
    openThought = undefined;
  }
  function thought(out: StreamEvent[]): number {
    closeText(out);
    if (openThought === undefined) {
      openThought = nextIndex++;
      out.push({ type: 'block_start', index: openThought, block: { type: 'reasoning' } });
    }
    return openThought;
  }

  return {
    push(event: SseEvent): StreamEvent[] {
      if (done) return [];
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
      for (const raw of arr(rec(candidateOf(chunk).content).parts)) {
        const part = rec(raw);
        if (part.thought === true) {
          const text = str(part.text) ?? '';
          const index = thought(out);
          if (text !== '') out.push({ type: 'reasoning_delta', index, text });
          continue;
        }
        if (isRecord(part.functionCall) && typeof part.thoughtSignature === 'string') {
          // The call's signature closes the thought before it (or an empty one).
          out.push({ type: 'reasoning_signature', index: thought(out), signature: part.thoughtSignature, source: 'gemini' });
        }
        closeThought(out);
        if (typeof part.text === 'string' && part.text !== '') {
          if (openText === undefined) {
            openText = nextIndex++;
            out.push({ type: 'block_start', index: openText, block: { type: 'text' } });
          }
          out.push({ type: 'text_delta', index: openText, text: part.text });
        } else if (isRecord(part.functionCall)) {
          // A call arrives whole: start, all arguments, stop.
          closeText(out);
          const index = nextIndex++;
          const id = str(part.functionCall.id) ?? synthesizedCallId(ctx, calls);
          calls += 1;
          out.push(
            { type: 'block_start', index, block: { type: 'tool_call', id, name: str(part.functionCall.name) ?? '' } },
            { type: 'tool_args_delta', index, json: JSON.stringify(part.functionCall.args ?? {}) },
            { type: 'block_stop', index },
          );
        }
      }
      finishReason = finishReasonOf(chunk) ?? finishReason;
      usage = readGeminiUsage(chunk.usageMetadata) ?? usage;
      return out;
    },
    end(): StreamEvent[] {
      if (done) return [];
      done = true;
      if (finishReason === undefined) return [{ type: 'error', message: 'upstream stream ended before it finished', code: 'upstream_error' }];
      const out: StreamEvent[] = [];
      closeThought(out);
      closeText(out);
      const stopReason = readStopReason('gemini', finishReason, calls > 0);
      out.push(usage === undefined ? { type: 'finish', stopReason } : { type: 'finish', stopReason, usage });
      return out;
    },
    usage: () => usage,
  };
}

function errorEvents(failure: StreamFailure): OutputEvent[] {
  return [{ data: { error: { code: 500, message: failure.message, status: 'INTERNAL' } } }];
}

/** Neutral events → GenerateContentResponse chunks; a function call is sent whole when its block stops. */
function createStreamEmitter(ctx: ResponseContext): StreamEmitter {
  let closed = false;
  const calls = new Map<number, { name: string; args: string }>();

  const chunk = (parts: Json[], extra: Json = {}): Json => ({
    candidates: [{ content: { role: 'model', parts }, ...extra, index: 0 }],
    modelVersion: ctx.model,
    responseId: ctx.id,
  });

  return {
    push(event: StreamEvent): OutputEvent[] {
      if (closed) return [];
      switch (event.type) {
        case 'text_delta':
          return [{ data: chunk([{ text: event.text }]) }];
        case 'reasoning_delta':
          return [{ data: chunk([{ text: event.text, thought: true }]) }];
        // Another provider's signature means nothing to a Gemini client.
        case 'reasoning_signature':
          return [];
        case 'block_start':
          if (event.block.type === 'tool_call') calls.set(event.index, { name: event.block.name, args: '' });
          return [];
        case 'tool_args_delta': {
          const call = calls.get(event.index);
          if (call !== undefined) call.args += event.json;
          return [];
        }
        case 'block_stop': {
          const call = calls.get(event.index);
          return call === undefined ? [] : [{ data: chunk([{ functionCall: { name: call.name, args: parseArgs(call.args) } }]) }];
        }
        case 'finish': {
          closed = true;
          const data = chunk([{ text: '' }], { finishReason: STOP_TO_WIRE[event.stopReason].gemini });
          if (event.usage !== undefined) data.usageMetadata = writeGeminiUsage(event.usage);
          return [{ data, carriesUsage: true }];
        }
        case 'error':
          closed = true;
          return errorEvents(event);
        case 'start':
          return [];
      }
    },
    end: () => [],
  };
}

export const gemini: Codec = {
  parseRequest,
  emitRequest,
  parseResponse,
  emitResponse,
  readUsage: (body) => readGeminiUsage(body.usageMetadata),
  createStreamParser,
  createStreamEmitter,
  errorEvents,
};
