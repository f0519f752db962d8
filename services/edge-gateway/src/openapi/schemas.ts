import { ERROR_CODES, ERROR_TABLE, type ErrorCode } from '@gw/errors';
import type { FastifySchema } from 'fastify';
import { z } from 'zod';
import { ImageEditRequest, ImageGenerationRequest, VideoRequest } from '../schemas/media.ts';
import { ChatCompletionRequest, CountTokensRequest, LegacyChatRequest, MessagesRequest, ResponsesRequest } from '../schemas/text.ts';

/**
 * Every public request body's schema (src/schemas), by its name in the OpenAPI document: each
 * validates its route's body and is documented as its JSON Schema (`SCHEMAS`).
 */
export const REQUEST_BODIES = {
  ChatCompletionRequest,
  LegacyChatRequest,
  MessagesRequest,
  CountTokensRequest,
  ResponsesRequest,
  ImageGenerationRequest,
  ImageEditRequest,
  VideoRequest,
};

const NAME_OF = new Map<z.ZodType, string>(Object.entries(REQUEST_BODIES).map(([name, schema]) => [schema, name]));

/** A route schema as the OpenAPI document shows it: a request body by reference to its named schema. */
export function documentedRoute(route: FastifySchema): FastifySchema {
  const name = route?.body instanceof z.ZodType ? NAME_OF.get(route.body) : undefined;
  return name === undefined ? route : { ...route, body: { $ref: `${name}#` } };
}

/** A body schema as JSON Schema: what a client may send (refinements are stated in words, in the 400's message). */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  return json;
}

/**
 * JSON Schemas of the public API, registered with fastify (`addSchema`) and referenced by the
 * routes, from which the OpenAPI document is generated. They document the wire shapes (spec
 * sections 2 and 4); the imitated protocols' own fields beyond those the spec names pass
 * through, so request and response schemas stay open (`additionalProperties`).
 */
const service = {
  type: 'object',
  description: 'Billing of this request (spec 2.3).',
  properties: { credit_charged: { type: 'integer' }, balance_after: { type: 'integer' } },
  required: ['credit_charged', 'balance_after'],
};
export const SCHEMAS: Array<{ $id: string } & Record<string, unknown>> = [
  ...Object.entries(REQUEST_BODIES).map(([$id, schema]) => ({ $id, ...jsonSchemaOf(schema) })),
  {
    $id: 'ErrorBody',
    type: 'object',
    description: 'Every failure (spec 7.1). Clients branch on `code`.',
    properties: {
      error: {
        type: 'object',
        properties: {
          code: { type: 'string', enum: ERROR_CODES },
          message: { type: 'string' },
          limit_type: { type: 'string', description: '`api_key_limit_exceeded`: spending | requests | tokens; `rate_limit_exceeded`: per_second | per_minute | in_flight_bytes (too many request body bytes in progress at once)' },
          period: { type: 'string', enum: ['daily', 'monthly', 'lifetime'] },
          retry_after_seconds: { type: 'integer' },
          job_id: { type: 'string', description: '`duplicate_request` once the first request finished' },
        },
        required: ['code', 'message'],
      },
    },
    required: ['error'],
  },
  { $id: 'Service', ...service },
  {
    $id: 'Model',
    type: 'object',
    properties: {
      id: { type: 'string' },
      kind: { type: 'string', enum: ['TEXT', 'IMAGE', 'VIDEO'] },
      capabilities: { type: 'array', items: { type: 'string' } },
      price_credit_per_unit: { type: 'integer' },
      billing_unit: { type: 'string', enum: ['million_tokens', 'image', 'second'] },
      object: { type: 'string', enum: ['model'], description: 'OpenAI SDK field.' },
      created: { type: 'integer', description: 'OpenAI SDK field: when the model was added to the catalog (unix seconds).' },
      owned_by: { type: 'string', description: 'OpenAI SDK field: the provider of the model’s primary route.' },
      alias_of: { type: 'string', description: 'Present on an alias: the model it names (billed and counted as that model).' },
      type: { type: 'string', enum: ['model'], description: 'Anthropic SDK field; only with an `anthropic-version` header.' },
      display_name: { type: 'string', description: 'Anthropic SDK field (the id); only with an `anthropic-version` header.' },
      created_at: { type: 'string', format: 'date-time', description: 'Anthropic SDK field; only with an `anthropic-version` header.' },
    },
    required: ['id', 'kind', 'capabilities', 'price_credit_per_unit', 'billing_unit', 'object', 'created', 'owned_by'],
  },
  {
    $id: 'ModelList',
    type: 'object',
    properties: {
      data: { type: 'array', items: { $ref: 'Model#' } },
      has_more: { type: 'boolean', description: 'Anthropic SDK paging; only with an `anthropic-version` header (always false: one page).' },
      first_id: { type: ['string', 'null'], description: 'Anthropic SDK paging; only with an `anthropic-version` header.' },
      last_id: { type: ['string', 'null'], description: 'Anthropic SDK paging; only with an `anthropic-version` header.' },
    },
    required: ['data'],
  },
  {
    $id: 'ChatCompletion',
    type: 'object',
    additionalProperties: true,
    description: 'The chat-completions answer; with `stream: true`, `text/event-stream` chunks whose last (before `[DONE]`) carries `usage` and `service`.',
    properties: {
      choices: { type: 'array', items: { type: 'object', properties: { message: { type: 'object', properties: { content: { type: ['string', 'null'] } } } } } },
      usage: { type: 'object', properties: { prompt_tokens: { type: 'integer' }, completion_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } } },
      service: { $ref: 'Service#' },
    },
  },
  {
    $id: 'LegacyChatResponse',
    type: 'object',
    properties: { reply: { type: 'string' }, tokensUsed: { type: 'integer' }, creditCharged: { type: 'integer' }, balanceAfter: { type: 'integer' } },
    required: ['reply', 'tokensUsed', 'creditCharged', 'balanceAfter'],
  },
  {
    $id: 'Message',
    type: 'object',
    additionalProperties: true,
    description: 'The messages answer; with `stream: true`, events `message_start` to `message_stop`, `service` in `message_delta`.',
    properties: {
      content: { type: 'array' },
      stop_reason: { type: ['string', 'null'] },
      usage: { type: 'object', properties: { input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' }, cache_creation_input_tokens: { type: 'integer' }, cache_read_input_tokens: { type: 'integer' } } },
      service: { $ref: 'Service#' },
    },
  },
  { $id: 'CountTokensResponse', type: 'object', properties: { input_tokens: { type: 'integer' } }, required: ['input_tokens'] },
  {
    $id: 'Response',
    type: 'object',
    additionalProperties: true,
    description: 'The responses answer; with `stream: true`, events `response.created` to `response.completed`, `service` in the final response.',
    properties: {
      output: { type: 'array' },
      status: { type: 'string', enum: ['completed', 'incomplete', 'failed'] },
      usage: { type: 'object', properties: { input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } } },
      service: { $ref: 'Service#' },
    },
  },
  {
    $id: 'ImagesResponse',
    type: 'object',
    properties: {
      data: { type: 'array', items: { type: 'object', properties: { b64_json: { type: 'string' }, mime_type: { type: 'string' } }, required: ['b64_json', 'mime_type'] } },
      usage: { type: 'object', properties: { images: { type: 'integer' } }, required: ['images'] },
      service: { $ref: 'Service#' },
    },
    required: ['data', 'usage'],
  },
  {
    $id: 'VideoJob',
    type: 'object',
    description: 'Spec 2.2.',
    properties: {
      id: { type: 'string', pattern: '^vidjob_' },
      status: { type: 'string', enum: ['queued', 'running', 'completed', 'failed'] },
      requested_duration_seconds: { type: 'integer' },
      content_url: { type: 'string' },
      completed_at: { type: 'integer' },
      expires_at: { type: 'integer' },
      actual_duration_seconds: { type: 'integer' },
      service: { type: 'object', properties: { credit_charged: { type: 'integer' }, credit_refunded: { type: 'integer' }, balance_after: { type: 'integer' } } },
    },
    required: ['status'],
  },
];

const SECURED = [{ bearerAuth: [] }];

/** Error responses of a route, grouped by HTTP status, each naming the codes it can carry. */
function errors(codes: ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_TABLE[code].http, [...(byStatus.get(ERROR_TABLE[code].http) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [status, { description: `Error: ${list.join(', ')}`, content: { 'application/json': { schema: { $ref: 'ErrorBody#' } } } }]),
  );
}

const AUTH: ErrorCode[] = ['auth_missing_or_malformed', 'auth_invalid', 'auth_revoked', 'auth_expired', 'rate_limit_exceeded', 'upstream_error', 'upstream_timeout'];
const GENERATION: ErrorCode[] = [
  ...AUTH,
  'system_maintenance',
  'ai_requests_disabled',
  'invalid_request',
  'unknown_model',
  'capability_not_supported',
  'model_disabled',
  'pricing_not_configured',
  'provider_catalog_stale',
  'model_temporarily_unavailable',
  'api_key_limit_exceeded',
  'insufficient_balance',
  'upstream_rate_limited',
];
const TEXT: ErrorCode[] = [...GENERATION, 'api_key_quota_reconciliation_required'];
const MEDIA: ErrorCode[] = [...GENERATION, 'duplicate_request'];

interface RouteDoc<B extends z.ZodType | undefined> {
  summary: string;
  tags: string[];
  body?: B;
  ok: string;
  codes: ErrorCode[];
  /** Answers `text/event-stream` too when the body asks for `stream: true`. */
  streams?: boolean;
  params?: string[];
  produces?: string;
  headers?: Record<string, string>;
}

function routeSchema<B extends z.ZodType | undefined = undefined>(doc: RouteDoc<B>) {
  const ok = doc.produces
    ? { description: 'OK', content: { [doc.produces]: { schema: { type: 'string', format: 'binary' } } } }
    : {
        description: doc.streams ? 'OK (JSON, or an SSE stream when `stream` is true)' : 'OK',
        content: {
          'application/json': { schema: { $ref: `${doc.ok}#` } },
          ...(doc.streams ? { 'text/event-stream': { schema: { type: 'string' } } } : {}),
        },
      };
  return {
    summary: doc.summary,
    tags: doc.tags,
    security: SECURED,
    // A route without a body has no `body` key at all (Fastify warns of one left undefined).
    ...((doc.body === undefined ? {} : { body: doc.body }) as B extends z.ZodType ? { body: B } : object),
    ...(doc.params ? { params: { type: 'object', properties: Object.fromEntries(doc.params.map((p) => [p, { type: 'string' }])), required: doc.params } } : {}),
    ...(doc.headers ? { headers: { type: 'object', properties: Object.fromEntries(Object.entries(doc.headers).map(([h, d]) => [h, { type: 'string', description: d }])) } } : {}),
    response: { 200: ok, ...errors(doc.codes) },
  };
}

const IDEMPOTENCY = { 'idempotency-key': 'Repeats of a create with this key answer 409 duplicate_request instead of charging again (spec 7.3).' };

/** The documentation of every public route, by the route's path below the base path. */
export const ROUTE_DOCS = {
  models: routeSchema({ summary: 'List callable models (spec 4.1); aliases are items of their own', tags: ['models'], ok: 'ModelList', codes: [...AUTH, 'model_catalog_disabled'] }),
  'models/:id': routeSchema({ summary: 'One listed model, by its id or an alias (404 not_found when not listed)', tags: ['models'], ok: 'Model', params: ['id'], codes: [...AUTH, 'model_catalog_disabled', 'not_found'] }),
  'chat/completions': routeSchema({ summary: 'Chat completions (spec 4.2)', tags: ['text'], body: ChatCompletionRequest, ok: 'ChatCompletion', codes: TEXT, streams: true }),
  chat: routeSchema({ summary: 'Original chat contract (spec 4.3)', tags: ['text'], body: LegacyChatRequest, ok: 'LegacyChatResponse', codes: TEXT }),
  messages: routeSchema({ summary: 'Messages protocol (spec 4.4)', tags: ['text'], body: MessagesRequest, ok: 'Message', codes: TEXT, streams: true }),
  'messages/count_tokens': routeSchema({
    summary: 'Count input tokens with the model’s own counter; free (spec 4.5)',
    tags: ['text'],
    body: CountTokensRequest,
    ok: 'CountTokensResponse',
    codes: GENERATION.filter((c) => c !== 'insufficient_balance' && c !== 'api_key_limit_exceeded'),
  }),
  responses: routeSchema({ summary: 'Responses protocol (spec 4.6)', tags: ['text'], body: ResponsesRequest, ok: 'Response', codes: TEXT, streams: true }),
  'images/generations': routeSchema({ summary: 'Create images (spec 4.7)', tags: ['images'], body: ImageGenerationRequest, ok: 'ImagesResponse', codes: MEDIA, headers: IDEMPOTENCY }),
  'images/edits': routeSchema({ summary: 'Edit an image (spec 4.8)', tags: ['images'], body: ImageEditRequest, ok: 'ImagesResponse', codes: MEDIA, headers: IDEMPOTENCY }),
  'images/jobs/:jobId': routeSchema({
    summary: 'Extension: the result of a finished image request made with an Idempotency-Key, kept 24 hours (the `job_id` of a 409)',
    tags: ['images'],
    ok: 'ImagesResponse',
    params: ['jobId'],
    codes: [...AUTH, 'not_found'],
  }),
  'videos/generations': routeSchema({ summary: 'Create a video job (spec 4.9); never resend once an id was received', tags: ['videos'], body: VideoRequest, ok: 'VideoJob', codes: MEDIA, headers: IDEMPOTENCY }),
  'videos/generations/:jobId': routeSchema({ summary: 'Video job status; free (spec 4.10)', tags: ['videos'], ok: 'VideoJob', params: ['jobId'], codes: [...AUTH, 'not_found'] }),
  'videos/generations/:jobId/content': routeSchema({
    summary: 'Download the MP4 of a completed job, Range supported, until expires_at (spec 4.11)',
    tags: ['videos'],
    ok: 'VideoJob',
    produces: 'video/mp4',
    params: ['jobId'],
    codes: [...AUTH, 'not_found'],
  }),
} as const;
