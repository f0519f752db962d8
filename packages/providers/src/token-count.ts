import { malformed } from './errors.ts';
import { isRecord, numberField } from './json.ts';
import type { JsonRecord } from './json.ts';
import { deadline } from './provider-context.ts';
import type { ProviderContext } from './provider-context.ts';
import type { CallOptions } from './types.ts';

/**
 * `POST {base}{path}` with a counting body and the count read from the answer's `field`: the call
 * every provider's token counter makes, each with its own path, body and field.
 */
export async function postTokenCount(
  ctx: ProviderContext,
  path: string,
  json: JsonRecord,
  field: string,
  opts: CallOptions | undefined,
): Promise<number> {
  const answer = await ctx.http.json({ method: 'POST', url: ctx.url(path), json, timeoutMs: deadline(ctx, 'listMs', opts), options: opts });
  const tokens = isRecord(answer) ? numberField(answer, field) : undefined;
  if (tokens === undefined) throw malformed(ctx.name, `the token count has no ${field}`);
  return tokens;
}
