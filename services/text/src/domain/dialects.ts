import { textV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { ProviderAdapter, TextDialect } from '@gw/providers';

/** The client protocols, as the gRPC contract names them. */
const CLIENT_DIALECTS: Partial<Record<textV1.Dialect, TextDialect>> = {
  [textV1.Dialect.CHAT]: 'chat',
  [textV1.Dialect.MESSAGES]: 'messages',
  [textV1.Dialect.RESPONSES]: 'responses',
};

export function clientDialect(d: textV1.Dialect): TextDialect {
  const dialect = CLIENT_DIALECTS[d];
  if (!dialect) throw new GatewayError('invalid_request', 'Unknown text protocol.');
  return dialect;
}

/**
 * The dialect to speak to a provider: the client's own when the provider speaks it natively (the
 * request and answer then pass through without loss), else the provider's preferred one.
 */
export function providerDialect(adapter: ProviderAdapter, client: TextDialect): TextDialect {
  if (adapter.textDialects.includes(client)) return client;
  const preferred = adapter.textDialects[0];
  if (!preferred) throw new GatewayError('capability_not_supported', `Provider ${adapter.name} serves no text protocol.`);
  return preferred;
}

const ID_PREFIX: Record<TextDialect, string> = { chat: 'chatcmpl-', messages: 'msg_', responses: 'resp_', gemini: '' };

/** An id in the client protocol's own style, for answers we translate. */
export function responseId(dialect: TextDialect, requestId: string): string {
  return `${ID_PREFIX[dialect]}${requestId.replaceAll('-', '')}`;
}
