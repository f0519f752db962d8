import { textV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { ProviderAdapter, TextDialect } from '@gw/providers';
import { upstreamDialect } from '@gw/translate';

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

/** The dialect to speak to a provider (`upstreamDialect`: the client's own when it can). */
export function providerDialect(adapter: ProviderAdapter, client: TextDialect): TextDialect {
  const dialect = upstreamDialect(adapter.textDialects, client);
  if (!dialect) throw new GatewayError('capability_not_supported', `Provider ${adapter.name} serves no text protocol.`);
  return dialect;
}

const ID_PREFIX: Record<TextDialect, string> = { chat: 'chatcmpl-', messages: 'msg_', responses: 'resp_', gemini: '' };

/** An id in the client protocol's own style, for answers we translate. */
export function responseId(dialect: TextDialect, requestId: string): string {
  return `${ID_PREFIX[dialect]}${requestId.replaceAll('-', '')}`;
}
