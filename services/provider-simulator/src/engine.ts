import { stripDirectives } from './directives.ts';
import { isObject } from './json.ts';
import type { Effects } from './pipeline.ts';
import { sampleArguments, sampleInstance } from './tool-args.ts';
import { textTokens, truncateToTokens } from './tokens.ts';
import type { JsonObject } from './types.ts';

/**
 * The provider-neutral core of text generation: each provider module turns its request into a
 * Conversation, asks for a Plan, and renders the plan in its own wire format.
 */

export interface ToolSpec {
  name: string;
  schema: unknown;
  /** The responses namespace the function belongs to, if any. */
  namespace?: string;
  /** A responses custom tool: called with free-form text, not JSON arguments. */
  custom?: true;
}

export type ToolChoice = { mode: 'auto' } | { mode: 'none' } | { mode: 'required'; name?: string };

/** Structured output the request asks for: an instance of a JSON schema, or any JSON object. */
export type OutputFormat = { kind: 'json_schema'; schema: unknown } | { kind: 'json_object' };

export interface Conversation {
  /** Text of the last user turn (directives included). */
  lastUserText: string;
  /** When the conversation ends with a tool result: that result as text. */
  toolResult?: string;
  tools: ToolSpec[];
  toolChoice: ToolChoice;
  /** The request's structured-output format, when it asks for one. */
  format?: OutputFormat;
  /** The request asks the model to think (a reasoning effort, thinking enabled…). */
  reasoning?: boolean;
}

/** Thinking the answer starts with, when asked for: its text and the tokens it cost (part of the output tokens). */
export interface Reasoning {
  text: string;
  tokens: number;
}

export type Plan =
  | { kind: 'text'; text: string; finish: 'stop' | 'length'; outputTokens: number; reasoning?: Reasoning }
  | {
      kind: 'tool';
      name: string;
      namespace?: string;
      args: JsonObject;
      /** The arguments as sent: JSON, or a custom tool's free-form `input`. */
      argsJson: string;
      /** A custom tool's call: its free-form input (`argsJson` is the same text). */
      custom?: true;
      outputTokens: number;
      reasoning?: Reasoning;
    };

const LOREM = (
  'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore ' +
  'et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut ' +
  'aliquip ex ea commodo consequat.'
).split(' ');

const DEFAULT_TAIL = LOREM.slice(0, 12).join(' ');

function firstWords(text: string, count: number): string {
  const words = text.split(/\s+/).filter((w) => w !== '');
  return words.slice(0, count).join(' ') + (words.length > count ? '...' : '');
}

/** Ends the echoed text with a full stop unless it already ends a sentence. */
function sentence(text: string): string {
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

function loremWords(count: number): string {
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push(LOREM[i % LOREM.length]!);
  return out.join(' ');
}

/** The full (untruncated) reply text for a conversation. */
export function replyText(conv: Conversation, words: number | undefined): string {
  const tail = words === undefined ? DEFAULT_TAIL : loremWords(words);
  if (conv.toolResult !== undefined) {
    return `Simulated reply using the tool result: ${sentence(firstWords(conv.toolResult, 12) || '(empty)')} ${tail}`.trim();
  }
  return `Simulated reply to: ${sentence(firstWords(stripDirectives(conv.lastUserText), 8) || '(no text)')} ${tail}`.trim();
}

/**
 * The tool to call: the one a `tool=NAME` directive or the tool choice names (none when the request
 * has no tool of that name), else the first when a call is required, forced, or the prompt says
 * "weather".
 */
function chooseTool(conv: Conversation, effects: Effects): ToolSpec | undefined {
  if (conv.tools.length === 0 || conv.toolResult !== undefined || conv.toolChoice.mode === 'none') return undefined;
  const named = effects.toolName ?? (conv.toolChoice.mode === 'required' ? conv.toolChoice.name : undefined);
  if (named !== undefined) return conv.tools.find((t) => t.name === named) ?? (effects.toolName === undefined ? conv.tools[0] : undefined);
  if (conv.toolChoice.mode === 'required') return conv.tools[0];
  const wantsTool = effects.forceTool || /\bweather\b/i.test(conv.lastUserText);
  return wantsTool ? conv.tools[0] : undefined;
}

/** The answer's text: an instance of the requested schema, a JSON object, or the usual reply. */
function answerText(conv: Conversation, effects: Effects): string {
  if (conv.format?.kind === 'json_schema') return JSON.stringify(sampleInstance(conv.format.schema));
  const text = replyText(conv, effects.words);
  return conv.format?.kind === 'json_object' ? JSON.stringify({ reply: text }) : text;
}

function reasoningFor(conv: Conversation, effects: Effects): Reasoning | undefined {
  if (!conv.reasoning && !effects.reasoning) return undefined;
  const text = `Simulated reasoning about: ${sentence(firstWords(stripDirectives(conv.lastUserText), 8) || '(no text)')}`;
  return { text, tokens: textTokens(text) };
}

export function planReply(conv: Conversation, effects: Effects, maxTokens: number | undefined): Plan {
  const reasoning = reasoningFor(conv, effects);
  const extra = reasoning === undefined ? {} : { reasoning };
  const thought = reasoning?.tokens ?? 0;
  const tool = chooseTool(conv, effects);
  if (tool) {
    const args = tool.custom ? {} : sampleArguments(tool.schema);
    const argsJson = tool.custom ? `sim-${tool.name}-input` : JSON.stringify(args);
    const namespace = tool.namespace === undefined ? {} : { namespace: tool.namespace };
    const custom = tool.custom ? { custom: true as const } : {};
    return { kind: 'tool', name: tool.name, ...namespace, ...custom, args, argsJson, outputTokens: thought + textTokens(tool.name + argsJson), ...extra };
  }
  const full = answerText(conv, effects);
  const fullTokens = textTokens(full);
  if (maxTokens !== undefined && thought + fullTokens > maxTokens) {
    const room = Math.max(0, maxTokens - thought);
    return { kind: 'text', text: truncateToTokens(full, room), finish: 'length', outputTokens: thought + room, ...extra };
  }
  return { kind: 'text', text: full, finish: 'stop', outputTokens: thought + fullTokens, ...extra };
}

/**
 * Splits text into streaming deltas: a few words each, and at least `minParts` pieces whenever the
 * text has that many characters, so clients can observe a real stream.
 */
export function splitDeltas(text: string, minParts = 3): string[] {
  const words = text.match(/\S+\s*/g) ?? [];
  if (words.length >= minParts) {
    const perDelta = Math.max(1, Math.floor(words.length / 8));
    const out: string[] = [];
    for (let i = 0; i < words.length; i += perDelta) out.push(words.slice(i, i + perDelta).join(''));
    return out;
  }
  const parts = Math.min(minParts, text.length);
  if (parts <= 1) return text === '' ? [] : [text];
  const size = Math.ceil(text.length / parts);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Text of the prompt's tool result as a string (tool outputs may be strings, blocks or objects). */
export function toolResultText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    return value
      .map((part) => {
        if (typeof part === 'string') return part;
        return isObject(part) && typeof part.text === 'string' ? part.text : '';
      })
      .join(' ');
  }
  return JSON.stringify(value) ?? '';
}
