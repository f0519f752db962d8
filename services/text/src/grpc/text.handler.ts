import { serveExchange, textV1, type MethodsOf, type ServiceImpl } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { BytesBudget } from '@gw/service-kit';
import { countTokens, generate, generateStream, type TextDeps } from '../domain/text-generation.ts';

/**
 * Reserves a request body's bytes for as long as the request runs, or refuses it as the gateway
 * does (every gateway replica sends here, so the gateways' own budgets do not bound this one).
 */
function reserveBody(budget: BytesBudget, body: Uint8Array): () => void {
  const reserved = budget.reserve('', body.length);
  if ('full' in reserved) {
    throw new GatewayError('rate_limit_exceeded', 'The text service is holding as many request bodies as it can at once. Retry in a second.', {
      limit_type: 'in_flight_bytes',
      retry_after_seconds: 1,
    });
  }
  return reserved.release;
}

async function within<T>(budget: BytesBudget, body: Uint8Array, run: () => Promise<T>): Promise<T> {
  const release = reserveBody(budget, body);
  try {
    return await run();
  } finally {
    release();
  }
}

/** The TextService rpcs; the call's cancellation aborts the upstream call. */
export function textHandler(deps: TextDeps, budget: BytesBudget): ServiceImpl<MethodsOf<typeof textV1.TextService>> {
  return {
    generate: (req, ctx) => within(budget, req.body, () => generate(deps, req, ctx.signal)),
    exchange: (call, ctx) =>
      serveExchange(call, ctx, {
        service: textV1.TextService.typeName,
        methodOf: () => 'Generate',
        handle: async (req, signal) => {
          const request = req.generate;
          if (!request) throw new GatewayError('invalid_request', 'An exchange message must carry a request.');
          return { case: 'generate' as const, value: await within(budget, request.body, () => generate(deps, request, signal)) };
        },
      }),
    generateStream: async function* (req, ctx) {
      const release = reserveBody(budget, req.body);
      try {
        yield* generateStream(deps, req, ctx.signal);
      } finally {
        release();
      }
    },
    countTokens: (req, ctx) => within(budget, req.body, async () => ({ inputTokens: BigInt(await countTokens(deps, req, ctx.signal)) })),
  };
}
