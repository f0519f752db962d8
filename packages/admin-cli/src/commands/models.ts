import { create } from '@bufbuild/protobuf';
import { catalogV1 } from '@gw/contracts';
import type { Command } from 'commander';
import type { Clients } from '../clients.ts';
import { INT32_MAX, nonNegativeInt, UsageError } from '../output.ts';

type Run = (fn: (c: Clients) => Promise<Record<string, unknown>>, json: boolean) => Promise<void>;

const KIND_NAMES: Record<number, string> = {
  [catalogV1.ModelKind.TEXT]: 'TEXT',
  [catalogV1.ModelKind.IMAGE]: 'IMAGE',
  [catalogV1.ModelKind.VIDEO]: 'VIDEO',
};
const KINDS: Record<string, catalogV1.ModelKind> = {
  TEXT: catalogV1.ModelKind.TEXT,
  IMAGE: catalogV1.ModelKind.IMAGE,
  VIDEO: catalogV1.ModelKind.VIDEO,
};

export function modelOut(m: catalogV1.Model | undefined) {
  if (!m) return null;
  return {
    id: m.id,
    kind: KIND_NAMES[m.kind] ?? 'UNSPECIFIED',
    capabilities: m.capabilities,
    price_credit_per_unit: m.priceCreditPerUnit ?? null,
    enabled: m.enabled,
    aliases: m.aliases,
    routes: m.routes.map((r) => ({ provider: r.provider, upstream_model: r.upstreamModel, priority: r.priority, weight: r.weight })),
    limits: {
      max_output_tokens: m.limits?.maxOutputTokens,
      image_sizes: m.limits?.imageSizes,
      video_first_frame: m.limits?.videoFirstFrame,
      video_last_frame: m.limits?.videoLastFrame,
      first_byte_timeout_ms: m.limits?.firstByteTimeoutMs,
    },
  };
}

/** `provider:upstream_model[:priority[:weight]]` */
/**
 * `provider:upstream_model[:priority[:weight]]`. An upstream model id may hold colons itself
 * (fine-tuned ids: `ft:gpt-4o:org:abc`), so priority and weight are the trailing numeric fields.
 */
export function parseRoute(text: string): catalogV1.Route {
  const [provider = '', ...rest] = text.split(':');
  const numbers: string[] = [];
  while (numbers.length < 2 && rest.length > 1 && /^[0-9]+$/.test(rest.at(-1)!)) numbers.unshift(rest.pop()!);
  const upstreamModel = rest.join(':');
  const [priority = '0', weight = '1'] = numbers;
  if (!provider || !upstreamModel) throw new UsageError('--route is provider:upstream_model[:priority[:weight]]');
  return create(catalogV1.RouteSchema, {
    provider,
    upstreamModel,
    priority: Number(nonNegativeInt('route priority', priority, INT32_MAX)),
    weight: Number(nonNegativeInt('route weight', weight, INT32_MAX)),
  });
}

const list = (v: string | undefined) => (v ? v.split(',').map((s) => s.trim()).filter(Boolean) : []);

export function modelCommands(program: Command, run: Run): void {
  program
    .command('models')
    .description('the model catalog')
    .command('list')
    .option('--json', 'print one JSON object')
    .action((o: { json?: boolean }) =>
      run(async (c) => {
        const res = await c.catalog.listModels({ listableOnly: false });
        return { listing_hidden: res.listingHidden, models: res.models.map(modelOut) };
      }, !!o.json),
    );

  const model = program.command('model').description('one model');
  model
    .command('upsert')
    .requiredOption('--id <id>', 'public model id')
    .requiredOption('--kind <kind>', 'TEXT | IMAGE | VIDEO')
    .option('--route <route...>', 'provider:upstream_model[:priority[:weight]], repeatable; first is primary')
    .option('--provider <name>', 'provider (single route)')
    .option('--upstream-model <name>', 'provider model name (single route)')
    .option('--price <credits>', 'credits per unit (omit: no price)')
    .option('--capabilities <list>', 'comma-separated endpoint paths (default: all of the kind)')
    .option('--disabled', 'create disabled')
    .option('--max-output-tokens <n>', 'text: maximum output tokens')
    .option('--image-sizes <list>', 'image: accepted sizes, e.g. 1024x1024,512x512')
    .option('--first-frame', 'video: accepts a first frame')
    .option('--last-frame', 'video: accepts a last frame')
    .option('--first-byte-timeout-ms <n>', "text: a route's time to its answer's first event (streamed or complete) before the next route is tried (default 10000)")
    .option('--json', 'print one JSON object')
    .action(
      (o: {
        id: string;
        kind: string;
        route?: string[];
        provider?: string;
        upstreamModel?: string;
        price?: string;
        capabilities?: string;
        disabled?: boolean;
        maxOutputTokens?: string;
        imageSizes?: string;
        firstFrame?: boolean;
        lastFrame?: boolean;
        firstByteTimeoutMs?: string;
        json?: boolean;
      }) =>
        run(async (c) => {
          const kind = KINDS[o.kind.toUpperCase()];
          if (kind === undefined) throw new UsageError('--kind is TEXT, IMAGE or VIDEO');
          const routes = (o.route ?? []).map(parseRoute);
          if (routes.length === 0) {
            if (!o.provider || !o.upstreamModel) throw new UsageError('give --route, or --provider and --upstream-model');
            routes.push(create(catalogV1.RouteSchema, { provider: o.provider, upstreamModel: o.upstreamModel, weight: 1 }));
          }
          const res = await c.catalog.upsertModel({
            model: {
              id: o.id,
              kind,
              capabilities: list(o.capabilities),
              priceCreditPerUnit: o.price === undefined ? undefined : nonNegativeInt('--price', o.price),
              enabled: !o.disabled,
              provider: routes[0]!.provider,
              upstreamModel: routes[0]!.upstreamModel,
              routes,
              limits: {
                maxOutputTokens: o.maxOutputTokens === undefined ? 0 : Number(nonNegativeInt('--max-output-tokens', o.maxOutputTokens, INT32_MAX)),
                imageSizes: list(o.imageSizes),
                videoFirstFrame: !!o.firstFrame,
                videoLastFrame: !!o.lastFrame,
                firstByteTimeoutMs: o.firstByteTimeoutMs === undefined ? 0 : Number(nonNegativeInt('--first-byte-timeout-ms', o.firstByteTimeoutMs, 600_000n)),
              },
            },
          });
          return { model: modelOut(res.model) };
        }, !!o.json),
    );
  model
    .command('price')
    .requiredOption('--model <id>', 'model id')
    .option('--credits <n>', 'credits per unit')
    .option('--clear', 'remove the price')
    .option('--json', 'print one JSON object')
    .action((o: { model: string; credits?: string; clear?: boolean; json?: boolean }) =>
      run(async (c) => {
        if (!o.clear && o.credits === undefined) throw new UsageError('give --credits <n> or --clear');
        const res = await c.catalog.setPrice({
          modelId: o.model,
          priceCreditPerUnit: o.clear ? undefined : nonNegativeInt('--credits', o.credits!),
        });
        return { model: modelOut(res.model) };
      }, !!o.json),
    );
  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    model
      .command(`${name} <id>`)
      .option('--json', 'print one JSON object')
      .action((id: string, o: { json?: boolean }) =>
        run(async (c) => ({ model: modelOut((await c.catalog.setEnabled({ modelId: id, enabled })).model) }), !!o.json),
      );
  }

  const alias = model.command('alias').description("a model's other public ids (resolved, listed and billed as the model)");
  alias
    .command('add')
    .requiredOption('--model <id>', "the model's own id")
    .requiredOption('--alias <public id>', 'the other public id clients may send')
    .option('--json', 'print one JSON object')
    .action((o: { model: string; alias: string; json?: boolean }) =>
      run(async (c) => ({ model: modelOut((await c.catalog.addAlias({ modelId: o.model, alias: o.alias })).model) }), !!o.json),
    );
  alias
    .command('remove')
    .requiredOption('--alias <public id>', 'the alias to remove')
    .option('--json', 'print one JSON object')
    .action((o: { alias: string; json?: boolean }) =>
      run(async (c) => ({ model: modelOut((await c.catalog.removeAlias({ alias: o.alias })).model) }), !!o.json),
    );

  const catalog = program.command('catalog').description('catalog-wide operations');
  catalog
    .command('listing <state>')
    .description('hide | show the public model listing')
    .option('--json', 'print one JSON object')
    .action((state: string, o: { json?: boolean }) =>
      run(async (c) => {
        if (state !== 'hide' && state !== 'show') throw new UsageError('listing is hide or show');
        return { listing_hidden: (await c.catalog.setListingHidden({ hidden: state === 'hide' })).hidden };
      }, !!o.json),
    );
  catalog
    .command('sync')
    .description('ask every provider which models it serves, now')
    .option('--json', 'print one JSON object')
    .action((o: { json?: boolean }) =>
      run(async (c) => {
        const res = await c.catalog.syncProviders({});
        return {
          providers: res.providers.map((p) => ({
            provider: p.provider,
            ok: p.lastError === '',
            served_models: p.servedModels,
            last_success_at: p.lastSuccessUnixMs > 0n ? new Date(Number(p.lastSuccessUnixMs)).toISOString() : null,
            last_error: p.lastError || null,
          })),
        };
      }, !!o.json),
    );
}
