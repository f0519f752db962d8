import { textV1 } from '@gw/contracts';
import { FallbackRouter, ProviderRegistry } from '@gw/providers';
import { loadConfig, runGrpcService } from '@gw/service-kit';
import { z } from 'zod';
import { textHandler } from './grpc/text.handler.ts';

const env = loadConfig(
  z.object({
    /** Consecutive upstream failures after which a route cools down. */
    ROUTE_FAILURE_THRESHOLD: z.coerce.number().int().positive().default(3),
    ROUTE_COOL_DOWN_MS: z.coerce.number().int().positive().default(30_000),
  }),
);
const providers = ProviderRegistry.fromEnv();
const router = new FallbackRouter({ failureThreshold: env.ROUTE_FAILURE_THRESHOLD, coolDownMs: env.ROUTE_COOL_DOWN_MS });

await runGrpcService({
  name: 'text',
  defaultPort: 50053,
  register: ({ onStop }) => {
    onStop(() => providers.close());
    return [[textV1.TextService, textHandler({ providers, router, now: Date.now })]];
  },
});
