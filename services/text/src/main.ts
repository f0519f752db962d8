import { runGrpcService } from '@gw/service-kit';

// The text service's rpcs arrive with their issue; until then it runs the common skeleton:
// validated config, telemetry, logs, gRPC health and graceful shutdown.
await runGrpcService({ name: 'text', defaultPort: 50053, register: () => [] });
