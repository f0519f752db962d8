import { serveExchange, textV1, type MethodsOf, type ServiceImpl } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { BytesBudget } from '@gw/service-kit';
import { countTokens, generate, generateStream, type TextDeps } from '../domain/text-generation.ts';

/**
 * Reserves a request body's bytes for as long as the request runs, or refuses it as the gateway
 * does (every gateway replica sends here, so the gateways' own budgets do not bound this one).
 */
function reserveBody(budget: BytesBudget, bytes: number): () => void {
  const reserved = budget.reserve('', bytes);
  if ('full' in reserved) {
    throw new GatewayError('rate_limit_exceeded', 'The text service is holding as many request bodies as it can at once. Retry in a second.', {
      limit_type: 'in_flight_bytes',
      retry_after_seconds: 1,
    });
  }
  return reserved.release;
}

/** A request's body bytes: the client's body where sent, and its upstream translations. */
function bytesOf(req: { body: Uint8Array; upstream?: textV1.UpstreamBody[] }): number {
  let bytes = req.body.length;
  for (const u of req.upstream ?? []) bytes += u.body.length;
  return bytes;
}

async function within<T>(budget: BytesBudget, bytes: number, run: () => Promise<T>): Promise<T> {
  const release = reserveBody(budget, bytes);
  try {
    return await run();
  } finally {
    release();
  }
}

/** A streamed answer as exchange items, with its body's bytes reserved until the stream is over. */
async function* streamItems(deps: TextDeps, budget: BytesBudget, req: textV1.GenerateStreamRequest, signal: AbortSignal) {
  const release = reserveBody(budget, bytesOf(req));
  try {
    for await (const item of generateStream(deps, req, signal)) yield { case: 'item' as const, value: item };
  } finally {
    release();
  }
}

/** The TextService rpcs (generation only on the exchange); the call's cancellation aborts the upstream call. */
export function textHandler(deps: TextDeps, budget: BytesBudget, routeHealth: () => textV1.RouteHealth[] = () => []): ServiceImpl<MethodsOf<typeof textV1.TextService>> {
  return {
    exchange: (call, ctx) =>
      serveExchange(call, ctx, {
        service: textV1.TextService.typeName,
        methodOf: (req) => (req.generateStream ? 'GenerateStream' : 'Generate'),
        isCancel: (req) => req.cancel,
        handle: (req, signal) => {
          const { generate: request, generateStream: streamRequest } = req;
          if (streamRequest) return streamItems(deps, budget, streamRequest, signal);
          if (!request) throw new GatewayError('invalid_request', 'An exchange message must carry a request.');
          return within(budget, bytesOf(request), async () => ({ case: 'generate' as const, value: await generate(deps, request, signal) }));
        },
      }),
    countTokens: (req, ctx) => within(budget, bytesOf(req), async () => ({ inputTokens: BigInt(await countTokens(deps, req, ctx.signal)) })),
    listRouteHealth: async () => ({ routes: routeHealth() }),
  };
}
