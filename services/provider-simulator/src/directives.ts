import { asInteger } from './json.ts';

/**
 * Per-request instructions hidden in the prompt: `[[sim:fault=429]]`, `[[sim:latency=300; tool]]`.
 * Grammar: `[[sim:` item (`;` item)* `]]`, item = key [`=` value]; keys are case-insensitive, unknown
 * keys are ignored, and a later occurrence of a key wins. See the package README for the key list.
 */
export interface Directives {
  fault?: string;
  latencyMs?: number;
  /** Force a tool call when the request defines tools. */
  tool?: boolean;
  /** Force a call of the tool of this name (`tool=NAME`). */
  toolName?: string;
  /** Think before answering: reasoning items / thinking blocks where the protocol has them. */
  reasoning?: boolean;
  /** Reply with exactly this many filler words after the echo of the prompt. */
  words?: number;
  /** Pause between streamed events, in ms. */
  chunkDelayMs?: number;
}

const DIRECTIVE_GROUP = /\[\[sim:([^\]]*)\]\]/gi;

export function parseDirectives(text: string): Directives {
  const out: Directives = {};
  if (!text.includes('[[')) return out;
  for (const match of text.matchAll(DIRECTIVE_GROUP)) {
    for (const item of (match[1] ?? '').split(';')) {
      const eq = item.indexOf('=');
      const key = (eq < 0 ? item : item.slice(0, eq)).trim().toLowerCase();
      const value = eq < 0 ? '' : item.slice(eq + 1).trim();
      applyItem(out, key, value);
    }
  }
  return out;
}

function applyItem(out: Directives, key: string, value: string): void {
  const n = asInteger(value);
  switch (key) {
    case 'fault':
      if (value !== '') out.fault = value.toLowerCase();
      break;
    case 'latency':
      if (n !== undefined && n >= 0) out.latencyMs = n;
      break;
    case 'tool': {
      const flag = value === '' || value === 'true' || value === '1';
      out.tool = flag || (value !== 'false' && value !== '0');
      out.toolName = flag || !out.tool ? undefined : value;
      break;
    }
    case 'reasoning':
      out.reasoning = value === '' || value === 'true' || value === '1';
      break;
    case 'words':
      if (n !== undefined && n >= 0) out.words = Math.min(n, 100_000);
      break;
    case 'chunk_delay':
      if (n !== undefined && n >= 0) out.chunkDelayMs = n;
      break;
    default:
      break;
  }
}

/** The prompt with every directive group removed, for echoing back in replies. */
export function stripDirectives(text: string): string {
  return text.includes('[[') ? text.replace(DIRECTIVE_GROUP, ' ').replace(/\s+/g, ' ').trim() : text.trim();
}
