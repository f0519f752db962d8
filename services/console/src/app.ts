import { randomUUID } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import { accessLog } from '@gw/service-kit';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { ResolvedSession } from './auth/sessions.ts';
import type { AlertsClient, BillingClient } from './billing/clients.ts';
import type { Permission } from './members/roles.ts';
import type { ConsoleDeps, RouteDeps } from './deps.ts';
import { registerAssets } from './http/assets.ts';
import { cookieSettings } from './http/cookies.ts';
import { registerErrorPages } from './http/error-pages.ts';
import { applySecurityHeaders, registerSecurityHeaders } from './http/security-headers.ts';
import { messagePage } from './views/auth.view.ts';
import { accountRoutes } from './routes/account.routes.ts';
import { alertsRoutes } from './routes/alerts.routes.ts';
import { auditRoutes } from './routes/audit.routes.ts';
import { activityRoutes } from './routes/activity.routes.ts';
import { adminRoutes } from './routes/admin.routes.ts';
import { balanceRoutes } from './routes/balance.routes.ts';
import { keysRoutes } from './routes/keys.routes.ts';
import { loginRoutes } from './routes/login.routes.ts';
import { membersRoutes } from './routes/members.routes.ts';
import { homeOf } from './members/roles.ts';
import { requireMember } from './routes/member-guard.ts';
import { usageRoutes } from './routes/usage.routes.ts';

export type { ConsoleDeps } from './deps.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in member's session; set by the member guard on every member route. */
    memberSession: ResolvedSession | null;
    /** Billing as this member may use it (role-checked); set by the member guard. */
    billing: BillingClient;
    /** Billing's alerts and audit trail as this member may use them; set by the member guard. */
    alerts: AlertsClient;
  }
  interface FastifyContextConfig {
    /** What a member route needs; a member route without one is refused to everyone. */
    permission?: Permission;
  }
}

/** Largest request body: forms and the admin endpoint's JSON are tiny. */
export const BODY_LIMIT = 16 * 1024;

/**
 * No route of the console declares a JSON schema (forms and the admin endpoint's JSON are read by
 * zod in the handlers), so Fastify's default schema compilers, Ajv and fast-json-stringify (about
 * 90 modules, loaded when an app is made) would only take idle memory. A route given a schema
 * fails at start instead of going unchecked.
 */
const NO_JSON_SCHEMAS = {
  compilersFactory: {
    buildValidator: () => () => {
      throw new Error('console routes check their input with zod; Fastify JSON schemas are not compiled here');
    },
    buildSerializer: () => () => {
      throw new Error('console routes send their own output; Fastify JSON schemas are not compiled here');
    },
  },
};

/** Builds the dashboard app. `main.ts` owns listening, telemetry and shutdown. */
export async function buildApp(deps: ConsoleDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger,
    // Our own access log below (route pattern only); Fastify's would log URLs with tokens.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    trustProxy: deps.trustProxy,
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    schemaController: NO_JSON_SCHEMAS,
    // A malformed URL (`/%ff`) or an over-long id is refused before routing and hooks: answered
    // here as a page with every security header, never the framework's raw JSON.
    frameworkErrors: (err, request, reply: FastifyReply) => {
      applySecurityHeaders(request, reply, deps.publicOrigin);
      const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400;
      void reply.code(status).type('text/html; charset=utf-8').send(messagePage('Not accepted', 'The address was not understood. Check the link, or go back to the console.').value);
    },
  });
  const routeDeps: RouteDeps = {
    ...deps,
    cookies: cookieSettings(deps.secureCookies),
    now: deps.now ?? (() => new Date()),
    originOf: (request) => deps.publicOrigin ?? `${request.protocol}://${request.host}`,
  };
  app.decorateRequest('memberSession', null);
  app.decorateRequest('billing', null as unknown as BillingClient);
  app.decorateRequest('alerts', null as unknown as AlertsClient);
  await app.register(fastifyCookie);
  await app.register(fastifyFormbody, { bodyLimit: BODY_LIMIT });
  registerSecurityHeaders(app, deps.publicOrigin);
  registerErrorPages(app);

  // Access log: route pattern only, never the URL (set-password tokens travel in the query).
  app.addHook('onResponse', accessLog<FastifyRequest, FastifyReply>((request) => ({ member: request.memberSession?.member.memberId })));

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => (deps.isReady() ? { status: 'ready' } : reply.code(503).send({ status: 'not ready' })));
  registerAssets(app);

  await app.register(loginRoutes, routeDeps);
  // The operator's endpoints, unless they are served on a port of their own (`buildAdminApp`).
  if (!deps.adminOnOwnPort) await app.register(adminRoutes, routeDeps);
  // Everything else requires a session; state-changing requests also a CSRF token and our Origin.
  await app.register(async (member) => {
    requireMember(member, routeDeps);
    member.get('/', { config: { permission: 'self' } }, async (request, reply) => reply.redirect(homeOf(request.memberSession!.member.role), 303));
    await member.register(keysRoutes, routeDeps);
    await member.register(usageRoutes, routeDeps);
    await member.register(activityRoutes, routeDeps);
    await member.register(balanceRoutes, routeDeps);
    await member.register(accountRoutes, routeDeps);
    await member.register(membersRoutes, routeDeps);
    await member.register(alertsRoutes, routeDeps);
    await member.register(auditRoutes, routeDeps);
  });
  return app;
}

/**
 * The operator's endpoints (`/internal/*`) alone, for a port of their own (`CONSOLE_ADMIN_PORT`):
 * a port no ingress routes to, so the members' host never serves them at all.
 */
export async function buildAdminApp(deps: ConsoleDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    schemaController: NO_JSON_SCHEMAS,
  });
  const routeDeps: RouteDeps = {
    ...deps,
    cookies: cookieSettings(deps.secureCookies),
    now: deps.now ?? (() => new Date()),
    originOf: (request) => deps.publicOrigin ?? `${request.protocol}://${request.host}`,
  };
  app.decorateRequest('memberSession', null);
  registerSecurityHeaders(app, deps.publicOrigin);
  registerErrorPages(app);
  app.addHook('onResponse', accessLog<FastifyRequest, FastifyReply>(() => ({})));
  await app.register(adminRoutes, routeDeps);
  return app;
}
