import { isProviderError, malformed, ProviderError } from './errors.ts';
import { isRecord } from './json.ts';
import type { JsonRecord } from './json.ts';
import type { CallOptions, ProviderAdapter, SseEvent, TextDialect } from './types.ts';

/**
 * A complete (non-streamed) answer rebuilt from the provider's own stream of it, in the provider's
 * own wire shape: the body the same call without `stream` would have answered. The gateway asks
 * for a stream so that a silent provider shows within the first-byte deadline even when the client
 * wants the whole answer at once; the rebuilt body then takes the path a complete answer always
 * took (translation, usage), so clients and billing see no difference. It is rebuilt in the wire
 * shape rather than through the translation's neutral form, which keeps only what it translates:
 * an answer in the client's own dialect passes through whole (logprobs, annotations, citations,
 * hosted tools' blocks).
 */
interface AnswerAssembler {
  push(event: SseEvent): void;
  /** The answer as the events so far make it. */
  answer(): JsonRecord;
}

const clone = <T>(value: T): T => structuredClone(value);

/** Fields whose stream fragments are pieces of one text, in chat deltas (content, reasoning, audio). */
const CHAT_TEXT_FIELDS = new Set(['content', 'refusal', 'reasoning_content', 'reasoning', 'data', 'transcript', 'arguments']);

/** Merges a chat delta into what came before: text pieces join, arrays extend, objects merge, the rest is replaced. */
function mergeDelta(into: JsonRecord, delta: JsonRecord): void {
  for (const [key, value] of Object.entries(delta)) {
    const have = into[key];
    if (key === 'tool_calls' && Array.isArray(value)) into[key] = mergeToolCalls(Array.isArray(have) ? have : [], value);
    else if (CHAT_TEXT_FIELDS.has(key) && typeof value === 'string') into[key] = (typeof have === 'string' ? have : '') + value;
    else if (Array.isArray(value) && Array.isArray(have)) into[key] = [...(have as unknown[]), ...(value as unknown[])];
    else if (isRecord(value) && isRecord(have)) mergeDelta(have, value);
    else if (value === null && have !== undefined) continue;
    else into[key] = clone(value);
  }
}

/** Tool-call fragments carry their call's `index`; the complete answer's calls have none. */
function mergeToolCalls(have: unknown[], fragments: unknown[]): unknown[] {
  const calls = have as JsonRecord[];
  for (const fragment of fragments) {
    if (!isRecord(fragment)) continue;
    const { index, ...rest } = fragment;
    const at = typeof index === 'number' ? index : calls.length;
    const call = calls[at];
    if (call === undefined) calls[at] = clone(rest);
    else mergeDelta(call, rest);
  }
  return calls;
}

/** OpenAI chat completions: `chat.completion.chunk`s, choices by `index`, usage in its own chunk. */
function chatAssembler(): AnswerAssembler {
  const head: JsonRecord = {};
  const choices = new Map<number, { message: JsonRecord; logprobs: JsonRecord | null; finish: unknown }>();
  let usage: unknown;
  return {
    push(event) {
      const chunk = event.data;
      if (!isRecord(chunk)) return;
      for (const key of ['id', 'created', 'model', 'service_tier', 'system_fingerprint']) {
        if (chunk[key] !== undefined && chunk[key] !== null) head[key] = chunk[key];
      }
      if (isRecord(chunk['usage'])) usage = chunk['usage'];
      for (const choice of Array.isArray(chunk['choices']) ? chunk['choices'] : []) {
        if (!isRecord(choice)) continue;
        const index = typeof choice['index'] === 'number' ? choice['index'] : 0;
        let acc = choices.get(index);
        if (!acc) choices.set(index, (acc = { message: {}, logprobs: null, finish: null }));
        if (isRecord(choice['delta'])) mergeDelta(acc.message, choice['delta']);
        if (isRecord(choice['logprobs'])) {
          acc.logprobs ??= {};
          mergeDelta(acc.logprobs, choice['logprobs']);
        }
        if (choice['finish_reason'] !== undefined && choice['finish_reason'] !== null) acc.finish = choice['finish_reason'];
      }
    },
    answer() {
      const { id, created, model, ...rest } = head;
      const out: JsonRecord = { id, object: 'chat.completion', created, model, ...rest };
      out['choices'] = [...choices.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, acc]) => {
          // A complete message always has these, null or empty when unused.
          const message: JsonRecord = { role: 'assistant', content: null, ...acc.message, refusal: acc.message['refusal'] ?? null, annotations: acc.message['annotations'] ?? [] };
          if (Array.isArray(message['tool_calls'])) message['tool_calls'] = message['tool_calls'].filter((call) => call !== undefined);
          return { index, message, logprobs: acc.logprobs, finish_reason: acc.finish };
        });
      if (usage !== undefined) out['usage'] = usage;
      return out;
    },
  };
}

/** Anthropic messages: `message_start`'s message, its content blocks by index, then `message_delta`. */
function messagesAssembler(): AnswerAssembler {
  let message: JsonRecord = {};
  const content: JsonRecord[] = [];
  const partialJson = new Map<number, string>();
  const blockAt = (index: unknown): JsonRecord | undefined => (typeof index === 'number' ? content[index] : undefined);
  return {
    push(event) {
      const data = event.data;
      if (!isRecord(data)) return;
      switch (data['type']) {
        case 'message_start':
          if (isRecord(data['message'])) message = clone(data['message']);
          break;
        case 'content_block_start':
          if (typeof data['index'] === 'number' && isRecord(data['content_block'])) content[data['index']] = clone(data['content_block']);
          break;
        case 'content_block_delta': {
          const block = blockAt(data['index']);
          const delta = data['delta'];
          if (!block || !isRecord(delta)) break;
          if (delta['type'] === 'text_delta') block['text'] = `${typeof block['text'] === 'string' ? block['text'] : ''}${String(delta['text'] ?? '')}`;
          else if (delta['type'] === 'thinking_delta') block['thinking'] = `${typeof block['thinking'] === 'string' ? block['thinking'] : ''}${String(delta['thinking'] ?? '')}`;
          else if (delta['type'] === 'signature_delta') block['signature'] = delta['signature'];
          else if (delta['type'] === 'citations_delta') block['citations'] = [...(Array.isArray(block['citations']) ? block['citations'] : []), delta['citation']];
          else if (delta['type'] === 'input_json_delta') partialJson.set(data['index'] as number, (partialJson.get(data['index'] as number) ?? '') + String(delta['partial_json'] ?? ''));
          break;
        }
        case 'content_block_stop': {
          const index = data['index'];
          const block = blockAt(index);
          const json = partialJson.get(index as number);
          // A tool's input arrives as JSON text in pieces; an empty one is an empty input.
          if (block && json !== undefined) block['input'] = json.trim() === '' ? {} : parseInput(json);
          partialJson.delete(index as number);
          break;
        }
        case 'message_delta': {
          if (isRecord(data['delta'])) Object.assign(message, data['delta']);
          const usage = data['usage'];
          if (isRecord(usage)) {
            const have = isRecord(message['usage']) ? message['usage'] : {};
            // The delta's counts are cumulative; fields it leaves null keep message_start's.
            message['usage'] = { ...have, ...Object.fromEntries(Object.entries(usage).filter(([, v]) => v !== null)) };
          }
          break;
        }
      }
    },
    answer() {
      return { ...message, content: content.filter((block) => block !== undefined) };
    },
  };
}

/** Thrown by an assembler on data no complete answer could hold; `assembleAnswer` maps it to a malformed answer. */
class UnassemblableError extends Error {}

function parseInput(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    throw new UnassemblableError('a tool input was not JSON');
  }
}

/** OpenAI responses: the final `response.completed` (or `.incomplete`) event carries the whole response. */
function responsesAssembler(): AnswerAssembler {
  let response: JsonRecord = {};
  return {
    push(event) {
      const data = event.data;
      if (!isRecord(data) || !isRecord(data['response'])) return;
      if (data['type'] === 'response.completed' || data['type'] === 'response.incomplete' || Object.keys(response).length === 0) response = data['response'];
    },
    answer: () => response,
  };
}

/** A Gemini text part that a following piece of the same text may extend. */
function textPart(part: unknown): part is JsonRecord & { text: string } {
  return isRecord(part) && typeof part['text'] === 'string' && Object.keys(part).every((key) => key === 'text' || key === 'thought' || key === 'thoughtSignature');
}

/** Gemini: every chunk is a GenerateContentResponse; candidates' parts add up, the rest is the latest. */
function geminiAssembler(): AnswerAssembler {
  const out: JsonRecord = {};
  const candidates = new Map<number, JsonRecord>();
  return {
    push(event) {
      const chunk = event.data;
      if (!isRecord(chunk)) return;
      for (const [key, value] of Object.entries(chunk)) {
        if (key !== 'candidates') {
          out[key] = value;
          continue;
        }
        out['candidates'] ??= [];
        if (!Array.isArray(value)) continue;
        value.forEach((candidate: unknown, position) => {
          if (!isRecord(candidate)) return;
          const index = typeof candidate['index'] === 'number' ? candidate['index'] : position;
          const acc = candidates.get(index) ?? {};
          candidates.set(index, acc);
          for (const [field, v] of Object.entries(candidate)) {
            if (field === 'content' && isRecord(v)) {
              const content = isRecord(acc['content']) ? acc['content'] : (acc['content'] = { parts: [] });
              for (const [k, x] of Object.entries(v)) if (k !== 'parts') content[k] = x;
              const parts = Array.isArray(content['parts']) ? (content['parts'] as unknown[]) : (content['parts'] = []);
              for (const part of Array.isArray(v['parts']) ? v['parts'] : []) appendPart(parts, part);
            } else if (field === 'citationMetadata' && isRecord(v) && isRecord(acc[field])) {
              mergeDelta(acc[field], v);
            } else acc[field] = clone(v);
          }
        });
      }
    },
    answer() {
      // In the order a complete answer has its fields.
      const answer: JsonRecord = {};
      if ('candidates' in out) answer['candidates'] = [...candidates.entries()].sort(([a], [b]) => a - b).map(([, c]) => c);
      for (const key of ['promptFeedback', 'usageMetadata']) if (key in out) answer[key] = out[key];
      return { ...answer, ...out, ...answer };
    },
  };
}

/** Pieces of one text join (a thought with a thought, an answer with an answer); anything else is a part of its own. */
function appendPart(parts: unknown[], part: unknown): void {
  const last = parts.at(-1);
  if (textPart(last) && textPart(part) && (last['thought'] === true) === (part['thought'] === true) && !(last['thoughtSignature'] !== undefined && part['thoughtSignature'] !== undefined)) {
    last['text'] += part['text'];
    if (part['thoughtSignature'] !== undefined) last['thoughtSignature'] = part['thoughtSignature'];
    return;
  }
  parts.push(clone(part));
}

function answerAssembler(dialect: TextDialect): AnswerAssembler {
  switch (dialect) {
    case 'chat':
      return chatAssembler();
    case 'messages':
      return messagesAssembler();
    case 'responses':
      return responsesAssembler();
    case 'gemini':
      return geminiAssembler();
  }
}

/**
 * Reads a stream to its end into the complete answer. Nothing of it has reached a client, so a
 * failure along the way (an error event, a broken or stalled connection, malformed data) may move
 * the request to the next route, as the same failure of a complete answer would: it is thrown
 * retryable again.
 */
async function assembleAnswer(provider: string, events: AsyncIterable<SseEvent>, assembler: AnswerAssembler): Promise<JsonRecord> {
  try {
    for await (const event of events) assembler.push(event);
  } catch (err) {
    if (err instanceof UnassemblableError) throw malformed(provider, err.message);
    if (!isProviderError(err) || err.retryable) throw err;
    throw new ProviderError(err.code, err.message, {
      provider: err.provider,
      retryable: true,
      ...(err.upstreamStatus === undefined ? {} : { upstreamStatus: err.upstreamStatus }),
      ...(err.retryAfterMs === undefined ? {} : { retryAfterMs: err.retryAfterMs }),
      cause: err,
    });
  }
  return assembler.answer();
}

/**
 * A complete text answer, asked of the provider as a stream: `body` is the streamed request (in
 * `dialect`, `stream` set, chat asking for its usage). `timeoutMs` is the first-byte deadline: a
 * provider that has sent nothing by then fails the call (retryable), one that has started answering
 * has until the provider's whole-answer deadline (`textTotalMs`) to finish, as a complete answer
 * always had. `usage` is given the rebuilt answer, as for a complete answer.
 */
export async function textAnswerFromStream(adapter: ProviderAdapter, dialect: TextDialect, body: JsonRecord, opts: CallOptions): Promise<JsonRecord> {
  const assembler = answerAssembler(dialect);
  const { usage, ...rest } = opts;
  const res = await adapter.text(dialect, body, { ...rest, stream: true, ...(usage ? { usage: () => usage(assembler.answer()) } : {}) });
  if (res.kind !== 'stream') throw malformed(adapter.name, 'the provider did not stream');
  return assembleAnswer(adapter.name, res.events, assembler);
}

/** A complete text answer asked of the provider as such, within the provider's whole-answer deadline. */
export async function textAnswerWhole(adapter: ProviderAdapter, dialect: TextDialect, body: JsonRecord, opts: CallOptions): Promise<JsonRecord> {
  const res = await adapter.text(dialect, body, { ...opts, stream: false });
  if (res.kind !== 'json') throw malformed(adapter.name, 'the provider streamed an answer that was not asked to stream');
  return res.body;
}
