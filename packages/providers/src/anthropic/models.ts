import { malformed } from '../errors.ts';
import { isRecord, recordsField, stringField } from '../json.ts';
import { deadline } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import type { CallOptions } from '../types.ts';
import { ANTHROPIC_PATHS } from './api.ts';

/** Guards against a provider that keeps answering `has_more` forever. */
const MAX_PAGES = 50;

/** `GET {base}/v1/models`, following `has_more`/`last_id` pages → `data[].id`. */
export async function listModels(ctx: ProviderContext, opts?: CallOptions): Promise<string[]> {
  const ids: string[] = [];
  let afterId: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ limit: '1000', ...(afterId === undefined ? {} : { after_id: afterId }) });
    const answer = await ctx.http.json({
      method: 'GET',
      url: `${ctx.url(ANTHROPIC_PATHS.models)}?${query.toString()}`,
      timeoutMs: deadline(ctx, 'listMs', opts),
      options: opts,
    });
    const data = isRecord(answer) ? recordsField(answer, 'data') : undefined;
    if (!isRecord(answer) || data === undefined) throw malformed(ctx.name, 'the model list has no data');
    for (const model of data) {
      const id = stringField(model, 'id');
      if (id !== undefined) ids.push(id);
    }
    afterId = stringField(answer, 'last_id');
    if (answer['has_more'] !== true || afterId === undefined) return ids;
  }
  throw malformed(ctx.name, 'the model list did not end');
}
