import { context, metrics, SpanKind, SpanStatusCode, trace, type Histogram, type Span } from '@opentelemetry/api';
import { GatewayError } from '@gw/errors';
import type { CallOptions, ProviderAdapter, ProviderKind, TextResult } from './types.ts';

/**
 * OpenTelemetry GenAI semantic conventions for provider calls: a CLIENT span per call named
 * `{operation} {model}`, and the `gen_ai.client.operation.duration` and `gen_ai.client.token.usage`
 * histograms by provider, model and error type. The attribute names are the conventions'
 * (still incubating upstream, so they are spelled here rather than imported).
 */
/**
 * Looked up at each use: `@opentelemetry/api` is loaded both as ESM (here) and as CommonJS (by the
 * SDK), and a tracer taken at module load, before the service registers the SDK, stays a no-op.
 */
const tracer = () => trace.getTracer('@gw/providers');

const PROVIDER_NAME: Record<ProviderKind, string> = { openai: 'openai', anthropic: 'anthropic', google: 'gcp.gemini', compat: 'openai' };

interface Instruments {
  duration: Histogram;
  tokens: Histogram;
}
let instruments: Instruments | undefined;
/** Created on first use: the meter provider is set up by the service after this module loads. */
function meters(): Instruments {
  instruments ??= {
    duration: metrics.getMeter('@gw/providers').createHistogram('gen_ai.client.operation.duration', {
      unit: 's',
      description: 'Duration of provider calls',
      advice: { explicitBucketBoundaries: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 163.84, 327.68] },
    }),
    tokens: metrics.getMeter('@gw/providers').createHistogram('gen_ai.client.token.usage', {
      unit: '{token}',
      description: 'Tokens used by provider calls',
      advice: { explicitBucketBoundaries: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576] },
    }),
  };
  return instruments;
}

interface CallInfo {
  operation: string;
  model: string | undefined;
}

class ProviderCall {
  readonly span: Span;
  readonly #attrs: Record<string, string>;
  readonly #start = performance.now();
  #ended = false;

  constructor(adapter: ProviderAdapter, info: CallInfo, server: string) {
    this.#attrs = {
      'gen_ai.operation.name': info.operation,
      'gen_ai.provider.name': PROVIDER_NAME[adapter.kind],
      ...(info.model ? { 'gen_ai.request.model': info.model } : {}),
      'gw.provider': adapter.name,
    };
    this.span = tracer().startSpan(`${info.operation}${info.model ? ` ${info.model}` : ''}`, {
      kind: SpanKind.CLIENT,
      attributes: { ...this.#attrs, 'server.address': server },
    });
  }

  end(err?: unknown, usage?: { inputTokens: number; outputTokens: number }): void {
    if (this.#ended) return;
    this.#ended = true;
    const attrs = { ...this.#attrs };
    if (err !== undefined) {
      const type = err instanceof GatewayError ? err.code : err instanceof Error ? err.name : 'error';
      attrs['error.type'] = type;
      this.span.setAttribute('error.type', type);
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: type });
    }
    if (usage) {
      this.span.setAttributes({ 'gen_ai.usage.input_tokens': usage.inputTokens, 'gen_ai.usage.output_tokens': usage.outputTokens });
      const m = meters();
      m.tokens.record(usage.inputTokens, { ...this.#attrs, 'gen_ai.token.type': 'input' });
      m.tokens.record(usage.outputTokens, { ...this.#attrs, 'gen_ai.token.type': 'output' });
    }
    meters().duration.record((performance.now() - this.#start) / 1000, attrs);
    this.span.end();
  }

  /** Runs `fn` with this call's span active, so the transport's own work is its child. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return context.with(trace.setSpan(context.active(), this.span), fn);
  }
}

async function* endingWith(events: AsyncIterable<unknown>, call: ProviderCall, opts: CallOptions | undefined): AsyncGenerator<never> {
  try {
    for await (const event of events) yield event as never;
    call.end(undefined, opts?.usage?.());
  } catch (err) {
    call.end(err);
    throw err;
  } finally {
    call.end();
  }
}

const model = (body: Record<string, unknown>) => (typeof body.model === 'string' ? body.model : undefined);

/** Wraps every operation of an adapter in a GenAI span and its metrics. */
export function instrumentAdapter(adapter: ProviderAdapter, baseUrl: string): ProviderAdapter {
  const server = new URL(baseUrl).host;
  const traced = async <T>(info: CallInfo, fn: () => Promise<T>, onResult?: (result: T, call: ProviderCall) => T): Promise<T> => {
    const call = new ProviderCall(adapter, info, server);
    try {
      const result = await call.run(fn);
      if (onResult) return onResult(result, call);
      call.end();
      return result;
    } catch (err) {
      call.end(err);
      throw err;
    }
  };
  const wrapped: ProviderAdapter = Object.create(adapter) as ProviderAdapter;
  return Object.assign(wrapped, {
    listModels: (opts?: CallOptions) => traced({ operation: 'list_models', model: undefined }, () => adapter.listModels(opts)),
    text: (dialect: Parameters<ProviderAdapter['text']>[0], body: Record<string, unknown>, opts: CallOptions & { stream: boolean }) =>
      traced({ operation: 'chat', model: model(body) }, () => adapter.text(dialect, body, opts), (result: TextResult, call) => {
        if (result.kind === 'stream') return { kind: 'stream', events: endingWith(result.events, call, opts) } satisfies TextResult;
        call.end(undefined, opts.usage?.(result.body));
        return result;
      }),
    ...(adapter.countTokens
      ? { countTokens: (dialect: Parameters<ProviderAdapter['text']>[0], body: Record<string, unknown>, opts?: CallOptions) => traced({ operation: 'count_tokens', model: model(body) }, () => adapter.countTokens!(dialect, body, opts)) }
      : {}),
    ...(adapter.generateImages ? { generateImages: (req: Parameters<NonNullable<ProviderAdapter['generateImages']>>[0], opts?: CallOptions) => traced({ operation: 'generate_content', model: req.model }, () => adapter.generateImages!(req, opts)) } : {}),
    ...(adapter.editImage ? { editImage: (req: Parameters<NonNullable<ProviderAdapter['editImage']>>[0], opts?: CallOptions) => traced({ operation: 'generate_content', model: req.model }, () => adapter.editImage!(req, opts)) } : {}),
    ...(adapter.createVideo ? { createVideo: (req: Parameters<NonNullable<ProviderAdapter['createVideo']>>[0], opts?: CallOptions) => traced({ operation: 'generate_content', model: req.model }, () => adapter.createVideo!(req, opts)) } : {}),
    ...(adapter.cancelVideo ? { cancelVideo: (id: string, opts?: CallOptions) => traced({ operation: 'cancel_video', model: undefined }, () => adapter.cancelVideo!(id, opts)) } : {}),
    ...(adapter.getVideo ? { getVideo: (id: string, opts?: CallOptions) => traced({ operation: 'get_video', model: undefined }, () => adapter.getVideo!(id, opts)) } : {}),
  });
}
