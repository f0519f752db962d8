/** The dialect registry: one codec per wire dialect. */
import { chat } from './dialects/chat.ts';
import { gemini } from './dialects/gemini.ts';
import { messages } from './dialects/messages.ts';
import { responses } from './dialects/responses.ts';
import type { Codec, Dialect } from './ir.ts';

export const CODECS: Record<Dialect, Codec> = { chat, messages, responses, gemini };
