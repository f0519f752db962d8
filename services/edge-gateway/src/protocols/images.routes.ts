import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from '../app.ts';

/** Images (spec 4.7, 4.8): generation and edits through `media`. */
export async function imagesRoutes(_app: FastifyInstance, _deps: GatewayDeps): Promise<void> {}
