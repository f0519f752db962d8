import { z } from 'zod';
import { content, numberIn, object, positiveInt, requiredList, requiredString, role, string, stringList, stringOrList, toolList, typed } from './fields.ts';

/**
 * The text protocols' request bodies (spec 4.2 to 4.6): one schema each, which validates (step 4
 * of the order of checks), types the route's body and documents it (OpenAPI). They name the
 * fields the gateway reads; the imitated protocols' other fields pass through as sent.
 */

const CHAT_ROLES = ['system', 'user', 'assistant', 'tool', 'developer'] as const;
/** `system` turns inside `messages`: current Claude clients send them (DECISIONS.md, "Real clients"). */
const MESSAGES_ROLES = ['user', 'assistant', 'system'] as const;
const RESPONSES_ROLES = ['user', 'assistant', 'system', 'developer'] as const;
const LEGACY_ROLES = ['system', 'user', 'assistant'] as const;

type Issues = z.core.ParsePayload['issues'];

/** `schema`'s problems with `value`, added to a check's own, below `path`. */
function checkAgainst(issues: Issues, schema: z.ZodType, value: unknown, path: PropertyKey[] = []): void {
  const result = schema.safeParse(value);
  if (!result.success) for (const issue of result.error.issues) issues.push({ ...issue, path: [...path, ...issue.path], input: undefined } as Issues[number]);
}

const required = (path: string) => ({ code: 'custom' as const, message: 'is required', input: undefined, path: [path] });

/**
 * The OpenAI dialects' optional fields may be `null`, meaning "not set", as OpenAI reads them (its
 * SDKs type `max_tokens`, `stream`, `instructions`… as nullable). The body handed on leaves every
 * top-level `null` out, rather than every reader minding it, so that a provider that reads `null`
 * otherwise never sees one (a compatible server told `max_tokens: null` would write past the
 * hold's cap). A required field sent as `null` is missing.
 */
function nullMeansUnset<T extends Record<string, unknown>>(body: T): T {
  if (!Object.values(body).includes(null)) return body;
  return Object.fromEntries(Object.entries(body).filter(([, value]) => value !== null)) as T;
}

const chatMessage = object({
  role: role(CHAT_ROLES),
  content: content().nullish(),
  tool_call_id: requiredString().optional(),
  tool_calls: z.array(z.unknown(), { error: 'must be an array' }).optional(),
}).check((ctx) => {
  const { role: who, content: text, tool_call_id: callId } = ctx.value;
  // An assistant turn may be only tool calls.
  if (who !== 'assistant' && (text === undefined || text === null)) ctx.issues.push({ ...required('content'), message: 'must be a string or an array of content parts' });
  if (who === 'tool' && callId === undefined) ctx.issues.push(required('tool_call_id'));
});

const chatTool = object({
  type: z.literal('function', { error: 'must be function' }),
  function: object({ name: requiredString() }),
});

export const ChatCompletionRequest = z
  .looseObject(
    {
      model: requiredString(),
      messages: requiredList(chatMessage),
      stream: typed.boolean().nullish(),
      stream_options: typed.object().nullish(),
      max_tokens: positiveInt().nullish(),
      max_completion_tokens: positiveInt().nullish(),
      temperature: numberIn(0, 2).nullish(),
      top_p: numberIn(0, 1).nullish(),
      stop: stringOrList().nullish(),
      // One choice per request: the only form every provider can serve, and what the hold covers.
      n: z.literal(1, { error: 'must be 1' }).nullish(),
      tools: toolList(chatTool).nullish(),
    },
    { error: 'the request body must be a JSON object' },
  )
  .transform(nullMeansUnset)
  .meta({ description: "Optional fields may be null, meaning not set, as in OpenAI's API." });

/** `POST /chat` (spec 4.3): `{model, messages: [{role, content: string}]}`, never streamed; other fields are not read. */
export const LegacyChatRequest = z
  .looseObject(
    {
      model: requiredString(),
      messages: requiredList(object({ role: role(LEGACY_ROLES), content: string() })),
      stream: z.literal(false, { error: 'is not supported on /chat; use /chat/completions' }).nullish(),
    },
    { error: 'the request body must be a JSON object' },
  )
  .transform(({ model, messages }) => ({ model, messages }));

const messagesFields = {
  model: requiredString(),
  max_tokens: positiveInt(),
  messages: requiredList(object({ role: role(MESSAGES_ROLES), content: content() })),
  system: z.union([z.string(), z.array(z.unknown())], { error: 'must be a string or an array of text blocks' }).optional(),
  stream: typed.boolean().optional(),
  temperature: numberIn(0, 1).optional(),
  top_p: numberIn(0, 1).optional(),
  stop_sequences: stringList().optional(),
  tools: toolList(object({ name: requiredString() })).optional().meta({ description: 'Forwarded unchanged.' }),
};

export const MessagesRequest = z.looseObject(messagesFields, { error: 'the request body must be a JSON object' });

/** `POST /messages/count_tokens` (spec 4.5): a messages request without `max_tokens` or `stream` (left out if sent). */
export const CountTokensRequest = z
  .looseObject(
    (({ max_tokens: _cap, stream: _stream, ...rest }) => rest)(messagesFields),
    { error: 'the request body must be a JSON object' },
  )
  .transform(({ max_tokens: _cap, stream: _stream, ...rest }) => rest);

const responsesMessage = object({ role: role(RESPONSES_ROLES), content: content() });

/** An input item: a message (typed `message` or untyped) has its role and content checked; other items pass as sent. */
const responsesItem = object({ type: string().optional() }).check((ctx) => {
  if (ctx.value.type === undefined || ctx.value.type === 'message') checkAgainst(ctx.issues, responsesMessage, ctx.value);
});

const responsesTool = object({ type: string() }).check((ctx) => {
  if (ctx.value.type === 'function') checkAgainst(ctx.issues, object({ name: requiredString() }), ctx.value);
});

export const ResponsesRequest = z
  .looseObject(
    {
      model: requiredString(),
      input: z.union([z.string(), z.array(responsesItem)], {
        error: (issue) => (issue.input === undefined || issue.input === null ? 'is required' : 'must be a string or an array of items'),
      }),
      instructions: typed.string().nullish(),
      stream: typed.boolean().nullish(),
      max_output_tokens: positiveInt().nullish(),
      temperature: numberIn(0, 2).nullish(),
      top_p: numberIn(0, 1).nullish(),
      tools: toolList(responsesTool).nullish().meta({ description: 'Forwarded unchanged.' }),
    },
    { error: 'the request body must be a JSON object' },
  )
  .transform(nullMeansUnset)
  .meta({ description: "Optional fields may be null, meaning not set, as in OpenAI's API." });
