import type { MessageInitShape } from '@bufbuild/protobuf';
import { createClient, ExchangeClient, fromExchangeFailure, RpcError, textV1, type CallOptions, type ClientOptions } from '@gw/contracts';
import { status } from '@grpc/grpc-js';

/** Text answers as the gateway asks for them on every request: complete, or streamed. */
export interface GenerateCalls {
  generate(req: MessageInitShape<typeof textV1.GenerateRequestSchema>, opts?: CallOptions): Promise<textV1.GenerateResponse>;
  generateStream(req: MessageInitShape<typeof textV1.GenerateStreamRequestSchema>, opts?: CallOptions): AsyncIterable<textV1.GenerateStreamResponse>;
}

const SERVICE = textV1.TextService.typeName;

/** A stream's last reply: its end item, or an error. */
const isLast = (res: textV1.ExchangeReply) => res.result.case !== 'item' || res.result.value.item.case === 'end';

/** A streaming call's items from its exchange replies, each error reply thrown as an rpc would throw it. */
async function* itemsOf(replies: AsyncIterable<textV1.ExchangeReply>, path: string): AsyncGenerator<textV1.GenerateStreamResponse> {
  for await (const res of replies) {
    if (res.result.case === 'item') yield res.result.value;
    else if (res.result.case === 'error') throw fromExchangeFailure(res.result.value, path);
  }
}

/**
 * `Generate` and `GenerateStream` over the text service's `Exchange` stream (its only way in to
 * generation): calls, answers and items share stream messages (those of one event-loop turn)
 * instead of an HTTP/2 stream per call. A broken stream fails its unanswered calls (a provider
 * call is not repeated behind the caller's back). One exchange per caller process.
 */
export function createGenerateExchange(address: string, opts: ClientOptions = {}): GenerateCalls & { close(): void } {
  const client = createClient(textV1.TextService, address, opts);
  const exchange = new ExchangeClient<textV1.ExchangeReply>(() => client.exchange(), {
    service: SERVICE,
    resend: false,
    defaultTimeoutMs: opts.defaultTimeoutMs,
    // A caller that stops waiting stops the provider call too.
    cancel: (id) => ({ id, cancel: true }),
  });
  return {
    async generate(req, callOpts) {
      const { result } = await exchange.call('Generate', (envelope) => ({ ...envelope, generate: req }), callOpts?.timeoutMs);
      if (result.case === 'generate') return result.value;
      if (result.case === 'error') throw fromExchangeFailure(result.value, `/${SERVICE}/Generate`);
      throw new RpcError(status.INTERNAL, `/${SERVICE}/Generate: the exchange answered a ${result.case ?? 'empty'} result`);
    },
    generateStream: (req, callOpts) => itemsOf(exchange.stream('GenerateStream', (envelope) => ({ ...envelope, generateStream: req }), isLast, callOpts), `/${SERVICE}/GenerateStream`),
    close() {
      exchange.close();
      client.close();
    },
  };
}
