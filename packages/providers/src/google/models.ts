import { malformed } from '../errors.ts';
import { isRecord, recordsField, stringField } from '../json.ts';
import { deadline } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import type { CallOptions } from '../types.ts';
import { GOOGLE_PATHS } from './api.ts';

/** Guards against a provider that keeps handing out page tokens forever. */
const MAX_PAGES = 50;

/** `GET {base}/models`, following `nextPageToken`; `models/<id>` names become `<id>`. */
export async function listModels(ctx: ProviderContext, opts?: CallOptions): Promise<string[]> {
  const ids: string[] = [];
  let pageToken: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ pageSize: '1000', ...(pageToken === undefined ? {} : { pageToken }) });
    const answer = await ctx.http.json({
      method: 'GET',
      url: `${ctx.url(GOOGLE_PATHS.models)}?${query.toString()}`,
      timeoutMs: deadline(ctx, 'listMs', opts),
      options: opts,
    });
    if (!isRecord(answer)) throw malformed(ctx.name, 'the model list is not an object');
    // An empty page may leave `models` out altogether.
    for (const model of recordsField(answer, 'models') ?? []) {
      const name = stringField(model, 'name');
      if (name !== undefined) ids.push(name.replace(/^models\//, ''));
    }
    pageToken = stringField(answer, 'nextPageToken');
    if (pageToken === undefined || pageToken === '') return ids;
  }
  throw malformed(ctx.name, 'the model list did not end');
}
