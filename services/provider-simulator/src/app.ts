import Fastify, { type FastifyError, type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify';
import { anthropicRoutes } from './anthropic/routes.ts';
import { DEFAULT_API_KEYS } from './auth.ts';
import { compatRoutes } from './compat/routes.ts';
import type { Sim } from './context.ts';
import { registerControl } from './control.ts';
import { sendError } from './errors.ts';
import { googleRoutes } from './google/routes.ts';
import { newId } from './ids.ts';
import { MultipartError, parseMultipart } from './multipart.ts';
import { openaiRoutes } from './openai/routes.ts';
import { redactedUrl, requestInfoOf } from './scope.ts';
import { SimulatorState } from './state.ts';
import { isProvider, type Provider } from './types.ts';

export interface SimulatorOptions {
  /** Fastify/pino logger options; false (the default) for silence in tests. */
  logger?: FastifyServerOptions['logger'];
  /** Time a video job takes from creation to its final state. Default 1500 ms. */
  videoDelayMs?: number;
  /** Credentials each provider accepts; defaults to `sim-<provider>-key`. */
  apiKeys?: Partial<Record<Provider, string>>;
  /** Entries kept for `GET /_sim/requests`. Default 500. */
  requestLogSize?: number;
  /** Upper bound of a `timeout` fault when the client never disconnects. Default 10 minutes. */
  timeoutFaultCapMs?: number;
  /** Largest accepted request body. Default 32 MiB: two 8 MB images as base64 plus the JSON around them. */
  bodyLimitBytes?: number;
}

/** The provider a URL belongs to, from its first path segment. */
function providerOfUrl(url: string): Provider | undefined {
  const segment = url.split('/')[1]?.split('?')[0] ?? '';
  return isProvider(segment) ? segment : undefined;
}

const REQUEST_ID_HEADERS: Record<Provider, string | undefined> = {
  openai: 'x-request-id',
  compat: 'x-request-id',
  anthropic: 'request-id',
  google: undefined,
};

/** Builds the simulator app (not listening): the four providers plus the /_sim control API. */
export function buildSimulator(opts: SimulatorOptions = {}): FastifyInstance {
  const bodyLimit = opts.bodyLimitBytes ?? 32 * 1024 * 1024;
  const app = Fastify({
    logger: opts.logger ?? false,
    // Fastify's two lines per request are replaced by one access line (see the onResponse hook).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    forceCloseConnections: true,
    genReqId: () => newId('req_sim'),
  });
  const sim: Sim = {
    state: new SimulatorState({ requestLogSize: opts.requestLogSize ?? 500, videoDelayMs: opts.videoDelayMs ?? 1500 }),
    config: {
      apiKeys: { ...DEFAULT_API_KEYS, ...opts.apiKeys },
      timeoutFaultCapMs: opts.timeoutFaultCapMs ?? 10 * 60 * 1000,
    },
  };

  app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer', bodyLimit }, (request, body, done) => {
    try {
      done(null, parseMultipart(body as Buffer, String(request.headers['content-type'])));
    } catch (err) {
      done(err instanceof MultipartError ? err : new MultipartError('malformed multipart body'), undefined);
    }
  });

  app.addHook('onRequest', async (request, reply) => {
    const provider = providerOfUrl(request.url);
    const header = provider === undefined ? undefined : REQUEST_ID_HEADERS[provider];
    if (header !== undefined) reply.header(header, String(request.id));
  });

  // One access line per request; never the body (prompts stay out of logs), and no API key in URLs.
  app.addHook('onResponse', async (request, reply) => {
    const info = requestInfoOf(request);
    request.log.info(
      {
        provider: info?.provider ?? providerOfUrl(request.url) ?? 'control',
        model: info?.model ?? undefined,
        method: request.method,
        url: redactedUrl(request.url),
        statusCode: reply.statusCode,
        responseTimeMs: Math.round(reply.elapsedTime),
      },
      'request completed',
    );
  });

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode <= 599 ? err.statusCode : 500;
    if (status >= 500) request.log.error({ err }, 'request failed');
    const provider = providerOfUrl(request.url);
    if (provider === undefined) return reply.code(status).send({ error: { message: err.message } });
    return sendError(reply, provider, status, status >= 500 ? 'Internal simulator error.' : err.message);
  });

  app.setNotFoundHandler((request, reply) => {
    const provider = providerOfUrl(request.url);
    const message = `Unknown route ${request.method} ${redactedUrl(request.url).split('?')[0]}`;
    if (provider === undefined) return reply.code(404).send({ error: { message } });
    return sendError(reply, provider, 404, message, { code: 'unknown_url' });
  });

  openaiRoutes(app, sim);
  anthropicRoutes(app, sim);
  googleRoutes(app, sim);
  compatRoutes(app, sim);
  registerControl(app, sim);
  return app;
}
