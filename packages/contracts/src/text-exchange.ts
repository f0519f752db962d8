import type { MessageInitShape } from '@bufbuild/protobuf';
import { GatewayError } from '@gw/errors';
import * as textV1 from './gen/gateway/text/v1/text_pb.js';
import { createClient, type ClientOptions } from './grpc/client.ts';
import { ExchangeClient, fromExchangeFailure, isExchangeUnsupported } from './grpc/exchange.ts';
import type { CallOptions } from './grpc/types.ts';

/** Text answers as the gateway asks for them on every request: complete, or streamed. */
export interface GenerateCalls {
  generate(req: MessageInitShape<typeof textV1.GenerateRequestSchema>, opts?: CallOptions): Promise<textV1.GenerateResponse>;
  generateStream(req: MessageInitShape<typeof textV1.GenerateStreamRequestSchema>, opts?: CallOptions): AsyncIterable<textV1.GenerateStreamResponse>;
}

const SERVICE = textV1.TextService.typeName;

/**
 * How the text service refuses an exchange message that carries no call it knows. A text service
 * from before streams travelled on the exchange answers a GenerateStream message so: nothing ran.
 */
export const NO_CALL_IN_MESSAGE = 'An exchange message must carry a request.';

/** A stream's last response: its end item, or an error. */
const isLast = (res: textV1.ExchangeResponse) => res.result.case !== 'item' || res.result.value.item.case === 'end';

/** A streaming call's items from its exchange responses, each error response thrown as the rpc would throw it. */
async function* itemsOf(responses: AsyncIterable<textV1.ExchangeResponse>, path: string): AsyncGenerator<textV1.GenerateStreamResponse> {
  for await (const res of responses) {
    if (res.result.case === 'item') yield res.result.value;
    else if (res.result.case === 'error') throw fromExchangeFailure(res.result.value, path);
  }
}

/**
 * `Generate` and `GenerateStream` over the text service's `Exchange` stream: the same answers,
 * items and errors as the rpcs, one stream message per request, answer or item instead of an
 * HTTP/2 stream per call. A broken stream fails its unanswered calls (a provider call is not
 * repeated behind the caller's back). One exchange per caller process. A text service without
 * the exchange (an older version, during a rollout) is called with the rpcs: it refused the
 * stream before taking anything, so nothing runs twice.
 */
export function createGenerateExchange(address: string, opts: ClientOptions = {}): GenerateCalls & { close(): void } {
  const client = createClient(textV1.TextService, address, opts);
  const exchange = new ExchangeClient<textV1.ExchangeResponse>(() => client.exchange(), {
    service: SERVICE,
    resend: false,
    defaultTimeoutMs: opts.defaultTimeoutMs,
    // A caller that stops waiting stops the provider call too, as cancelling the rpc did.
    cancel: (id) => ({ id, cancel: true }),
  });
  return {
    generate: (req, callOpts) =>
      exchange.request<textV1.GenerateResponse>('Generate', 'generate', (envelope) => ({ ...envelope, generate: req }), () => client.generate(req, callOpts), callOpts?.timeoutMs),
    async *generateStream(req, callOpts) {
      const responses = exchange.stream('GenerateStream', (envelope) => ({ ...envelope, generateStream: req }), isLast, callOpts);
      try {
        yield* itemsOf(responses, `/${SERVICE}/GenerateStream`);
      } catch (err) {
        // Refused before anything ran (so before any item) by a text service without the
        // exchange, or from before streams on it: the rpc instead.
        const olderServer = isExchangeUnsupported(err) || (err instanceof GatewayError && err.code === 'invalid_request' && err.message === NO_CALL_IN_MESSAGE);
        if (!olderServer) throw err;
        yield* client.generateStream(req, callOpts);
      }
    },
    close() {
      exchange.close();
      client.close();
    },
  };
}
