import type { MessageInitShape } from '@bufbuild/protobuf';
import * as textV1 from './gen/gateway/text/v1/text_pb.js';
import { createClient, type ClientOptions } from './grpc/client.ts';
import { ExchangeClient } from './grpc/exchange.ts';
import type { CallOptions } from './grpc/types.ts';

/** A complete text answer, as the gateway asks for it on every non-streaming request. */
export interface GenerateCalls {
  generate(req: MessageInitShape<typeof textV1.GenerateRequestSchema>, opts?: CallOptions): Promise<textV1.GenerateResponse>;
}

const SERVICE = textV1.TextService.typeName;

/**
 * `Generate` over the text service's `Exchange` stream: the same answers and errors as the unary
 * rpc, two stream messages per call instead of a call each. A broken stream fails its unanswered
 * calls (a provider call is not repeated behind the caller's back). One exchange per caller process.
 * A text service without the exchange (an older version, during a rollout) is called with the
 * unary rpc: it refused the stream before taking anything, so nothing runs twice.
 */
export function createGenerateExchange(address: string, opts: ClientOptions = {}): GenerateCalls & { close(): void } {
  const client = createClient(textV1.TextService, address, opts);
  const exchange = new ExchangeClient<textV1.ExchangeResponse>(() => client.exchange(), {
    service: SERVICE,
    resend: false,
    defaultTimeoutMs: opts.defaultTimeoutMs,
  });
  return {
    generate: (req, callOpts) =>
      exchange.request<textV1.GenerateResponse>('Generate', 'generate', (envelope) => ({ ...envelope, generate: req }), () => client.generate(req, callOpts), callOpts?.timeoutMs),
    close() {
      exchange.close();
      client.close();
    },
  };
}
