import { runGrpcService } from '@gw/service-kit';

// The video-jobs service's rpcs arrive with their issue; until then it runs the common skeleton:
// validated config, telemetry, logs, gRPC health and graceful shutdown.
await runGrpcService({ name: 'video-jobs', defaultPort: 50055, register: () => [] });
