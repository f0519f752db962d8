import { malformed } from '../errors.ts';
import { isRecord, recordsField, stringField } from '../json.ts';
import { deadline } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import type { CallOptions } from '../types.ts';
import { OPENAI_PATHS } from './api.ts';

/** `GET {base}/models` → `data[].id` (OpenAI and compatible servers; not paginated). */
export async function listModels(ctx: ProviderContext, opts?: CallOptions): Promise<string[]> {
  const answer = await ctx.http.json({
    method: 'GET',
    url: ctx.url(OPENAI_PATHS.models),
    timeoutMs: deadline(ctx, 'listMs', opts),
    options: opts,
  });
  const data = isRecord(answer) ? recordsField(answer, 'data') : undefined;
  if (data === undefined) throw malformed(ctx.name, 'the model list has no data');
  return data.map((model) => stringField(model, 'id')).filter((id) => id !== undefined);
}
