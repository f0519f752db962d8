import { serveExchange, textV1, type MethodsOf, type ServiceImpl } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { countTokens, generate, generateStream, type TextDeps } from '../domain/text-generation.ts';

/** The TextService rpcs; the call's cancellation aborts the upstream call. */
export function textHandler(deps: TextDeps): ServiceImpl<MethodsOf<typeof textV1.TextService>> {
  return {
    generate: (req, ctx) => generate(deps, req, ctx.signal),
    exchange: (call, ctx) =>
      serveExchange(call, ctx, {
        service: textV1.TextService.typeName,
        methodOf: () => 'Generate',
        handle: async (req, signal) => {
          if (!req.generate) throw new GatewayError('invalid_request', 'An exchange message must carry a request.');
          return { case: 'generate' as const, value: await generate(deps, req.generate, signal) };
        },
      }),
    generateStream: (req, ctx) => generateStream(deps, req, ctx.signal),
    countTokens: async (req, ctx) => ({ inputTokens: BigInt(await countTokens(deps, req, ctx.signal)) }),
  };
}
