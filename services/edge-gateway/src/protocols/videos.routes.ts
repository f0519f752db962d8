import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from '../app.ts';

/** Video jobs (spec 4.9 to 4.11) through `video-jobs`. */
export async function videosRoutes(_app: FastifyInstance, _deps: GatewayDeps): Promise<void> {}
