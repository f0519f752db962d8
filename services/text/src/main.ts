import { textV1 } from '@gw/contracts';
import { FallbackRouter, ProviderRegistry } from '@gw/providers';
import { BytesBudget, loadConfig, runGrpcService } from '@gw/service-kit';
import { z } from 'zod';
import { textHandler } from './grpc/text.handler.ts';

const env = loadConfig(
  z.object({
    /** Consecutive upstream failures after which a route cools down. */
    ROUTE_FAILURE_THRESHOLD: z.coerce.number().int().positive().default(3),
    ROUTE_COOL_DOWN_MS: z.coerce.number().int().positive().default(30_000),
    /** Request body bytes held at once, from every gateway: a request costs 4 to 6 times its body in memory (pod limit 768 MiB). */
    BODY_BUDGET_BYTES: z.coerce.number().int().positive().default(96 * 1024 * 1024),
  }),
);
const providers = ProviderRegistry.fromEnv();
const budget = new BytesBudget({ totalBytes: env.BODY_BUDGET_BYTES, perOwnerBytes: env.BODY_BUDGET_BYTES });
const router = new FallbackRouter({ failureThreshold: env.ROUTE_FAILURE_THRESHOLD, coolDownMs: env.ROUTE_COOL_DOWN_MS });

await runGrpcService({
  name: 'text',
  defaultPort: 50053,
  register: ({ onStop }) => {
    onStop(() => providers.close());
    return [[textV1.TextService, textHandler({ providers, router, now: Date.now }, budget)]];
  },
});
