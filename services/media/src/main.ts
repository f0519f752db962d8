import { runGrpcService } from '@gw/service-kit';

// The media service's rpcs arrive with their issue; until then it runs the common skeleton:
// validated config, telemetry, logs, gRPC health and graceful shutdown.
await runGrpcService({ name: 'media', defaultPort: 50054, register: () => [] });
