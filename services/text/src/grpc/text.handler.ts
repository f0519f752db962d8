import type { MethodsOf, ServiceImpl, textV1 } from '@gw/contracts';
import { countTokens, generate, generateStream, type TextDeps } from '../domain/text-generation.ts';

/** The TextService rpcs; the call's cancellation aborts the upstream call. */
export function textHandler(deps: TextDeps): ServiceImpl<MethodsOf<typeof textV1.TextService>> {
  return {
    generate: (req, ctx) => generate(deps, req, ctx.signal),
    generateStream: (req, ctx) => generateStream(deps, req, ctx.signal),
    countTokens: async (req, ctx) => ({ inputTokens: BigInt(await countTokens(deps, req, ctx.signal)) }),
  };
}
