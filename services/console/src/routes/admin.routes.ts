import { GatewayError } from '@gw/errors';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { RouteDeps } from '../deps.ts';
import { safeEqual } from '../auth/secrets.ts';
import { setPasswordUrl } from '../http/origins.ts';
import { EMAIL_MAX, MemberError, type IssuedLink, type MemberRow } from '../members/members.ts';
import { ROLES } from '../members/roles.ts';

/** How an operator names themselves (as the operator CLI does for billing). */
const ACTOR = /^operator:[\w.@-]{1,64}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const CreateMember = z.object({
  account_id: z.string().max(64),
  email: z.string().max(EMAIL_MAX),
  /**
   * Set a random password now and return it once, instead of a set-password link (the local
   * launcher's demo member; an operator hands people links).
   */
  generate_password: z.boolean().optional(),
  /** The member's role; an operator's member is an owner unless told otherwise. */
  role: z.enum(ROLES).optional(),
});

const ListMembers = z.object({ account_id: z.string().max(64) });
/** At most this many audit events per answer (`pnpm admin audit --members --limit`). */
const AUDIT_LIMIT_MAX = 1000;
const ListAudit = z.object({ account_id: z.string().max(64), limit: z.number().int().min(1).max(AUDIT_LIMIT_MAX).optional() });
const SetRole = z.object({ member_id: z.string().max(64), role: z.enum(ROLES) });
const RemoveMember = z.object({ member_id: z.string().max(64) });

const ResetPassword = z.object({ email: z.string().max(EMAIL_MAX) });

/** A set-password link as the operator's answers give it: on the configured origin only. */
export function linkFields(deps: Pick<RouteDeps, 'linkOrigin'>, link: IssuedLink): { set_password_url: string; expires_at: string } {
  return { set_password_url: setPasswordUrl(deps.linkOrigin(), link.token), expires_at: link.expiresAt.toISOString() };
}

const fail = (code: string, message: string) => ({ error: { code, message } });

/**
 * The operator's endpoint (used by `pnpm admin user create` and `user reset-password`): members
 * are created by operators only. It is not for browsers: a bearer token (CONSOLE_ADMIN_TOKEN)
 * instead of a session, JSON in and out, and it is absent altogether when no token is configured.
 * It answers direct connections only (in-cluster, or `kubectl port-forward`): a request that came
 * through a proxy or an ingress carries `X-Forwarded-For` or `Forwarded` and finds nothing here,
 * so routing the console's paths from the internet does not expose it.
 */
export async function adminRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  const token = deps.adminToken;
  if (!token) return;

  // This plugin is registered on its own (encapsulated), so the hook guards exactly the routes
  // below, however their path was spelled. It must not test the URL: the router matches the
  // decoded path, so `/%69nternal/…` reached these routes past a raw `startsWith('/internal/')`.
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers['x-forwarded-for'] !== undefined || request.headers.forwarded !== undefined) {
      request.log.warn('admin endpoint: refused a request that came through a proxy');
      return reply.code(404).send(fail('not_found', 'Not found.'));
    }
    const given = request.headers.authorization ?? '';
    if (!given.startsWith('Bearer ') || !safeEqual(given.slice('Bearer '.length), token)) {
      request.log.warn('admin endpoint: bad or missing token');
      return reply.code(401).send(fail('auth_invalid', 'A valid admin token is required.'));
    }
  });

  /**
   * Appends an operator's change to members to the console's audit trail. The operator names
   * themselves like billing's callers do, in `gw-actor: operator:<name>` (and `gw-actor-origin`)
   * request headers; else the operator is unnamed.
   */
  const audit = (request: FastifyRequest, accountId: string, action: string, details: Record<string, unknown>) => {
    const named = request.headers['gw-actor'];
    const origin = request.headers['gw-actor-origin'];
    return deps.members.recordAudit({
      accountId,
      actor: typeof named === 'string' && ACTOR.test(named) ? named : 'operator',
      origin: typeof origin === 'string' && origin.length <= 200 ? origin : request.ip,
      action,
      details,
    });
  };

  app.post('/internal/members', async (request, reply) => {
    const parsed = CreateMember.safeParse(request.body);
    if (!parsed.success) return reply.code(400).send(fail('invalid_request', `Send {"account_id", "email", "role"?} as JSON; role is one of ${ROLES.join(', ')}.`));
    const { account_id: accountId, email, generate_password: generate, role = 'owner' } = parsed.data;
    try {
      await deps.billing.getAccount({ accountId });
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'not_found') return reply.code(404).send(fail('not_found', 'No such account.'));
      throw err;
    }
    let member;
    try {
      member = await deps.members.create(accountId, email, role);
    } catch (err) {
      if (!(err instanceof MemberError)) throw err;
      return err.reason === 'exists'
        ? reply.code(409).send(fail('duplicate_request', err.message))
        : reply.code(400).send(fail('invalid_request', err.message));
    }
    await audit(request, accountId, 'console.InviteMember', { member_id: member.memberId, email: email.trim().toLowerCase(), role, created: member.created });
    request.log.info({ member: member.memberId, account: accountId, role, created: member.created }, 'member created by operator');
    if (generate) {
      const password = await deps.members.setGeneratedPassword(member.memberId);
      return reply.code(member.created ? 201 : 200).send({ user_id: member.memberId, member_id: member.memberId, role, password });
    }
    const link = await deps.members.issueSetPasswordToken(member.memberId);
    return reply.code(member.created ? 201 : 200).send({ user_id: member.memberId, member_id: member.memberId, role, ...linkFields(deps, link) });
  });

  /**
   * A new one-time set-password link for an existing member (a forgotten password). Their current
   * password keeps working until the link is used; using it ends all their sessions.
   */
  app.post('/internal/members/reset-password', async (request, reply) => {
    const parsed = ResetPassword.safeParse(request.body);
    if (!parsed.success) return reply.code(400).send(fail('invalid_request', 'Send {"email"} as JSON.'));
    const member = await deps.members.byEmail(parsed.data.email);
    if (!member) return reply.code(404).send(fail('not_found', 'No member with this e-mail address.'));
    const link = await deps.members.issueSetPasswordToken(member.id);
    request.log.info({ member: member.id, purpose: link.purpose }, 'set-password link issued by operator');
    return reply.code(200).send({ user_id: member.id, ...linkFields(deps, link) });
  });

  /** The members of an account with their roles (`pnpm admin member list`). */
  app.post('/internal/members/list', async (request, reply) => {
    const parsed = ListMembers.safeParse(request.body);
    if (!parsed.success || !UUID.test(parsed.data.account_id)) return reply.code(400).send(fail('invalid_request', 'Send {"account_id"} as JSON.'));
    const members = await deps.members.list(parsed.data.account_id.toLowerCase());
    return {
      members: members.map((m) => ({ member_id: m.memberId, email: m.email, role: m.role, status: m.active ? 'active' : 'invited', created_at: m.createdAt.toISOString() })),
    };
  });

  /** The console's audit trail of an account, newest first (`pnpm admin audit --members`): member, role and second-factor changes. */
  app.post('/internal/audit', async (request, reply) => {
    const parsed = ListAudit.safeParse(request.body);
    if (!parsed.success || !UUID.test(parsed.data.account_id)) {
      return reply.code(400).send(fail('invalid_request', `Send {"account_id", "limit"?} as JSON; account_id is a uuid, limit 1-${AUDIT_LIMIT_MAX} (default 200).`));
    }
    const events = await deps.members.auditEvents(parsed.data.account_id.toLowerCase(), parsed.data.limit ?? 200);
    return {
      events: events.map((e) => ({ actor: e.actor, origin: e.origin, action: e.action, details: JSON.parse(e.details) as unknown, created_at: e.at.toISOString() })),
    };
  });

  /** Gives a member another role (`pnpm admin member role`); never takes away an account's last owner. */
  app.post('/internal/members/role', async (request, reply) => {
    const parsed = SetRole.safeParse(request.body);
    if (!parsed.success || !UUID.test(parsed.data.member_id)) {
      return reply.code(400).send(fail('invalid_request', `Send {"member_id", "role"} as JSON; role is one of ${ROLES.join(', ')}.`));
    }
    const change = async () => {
      const m = await deps.members.setRole(parsed.data.member_id.toLowerCase(), parsed.data.role);
      await audit(request, m.account_id, 'console.SetRole', { member_id: m.id, email: m.email, to: parsed.data.role });
      return m;
    };
    return memberChange(reply, change, (m) => {
      request.log.info({ member: m.id, role: parsed.data.role }, 'member role changed by operator');
      return { member_id: m.id, email: m.email, role: parsed.data.role };
    });
  });

  /** Removes a member (`pnpm admin member remove`): their sessions and links end; never an account's last owner. */
  app.post('/internal/members/remove', async (request, reply) => {
    const parsed = RemoveMember.safeParse(request.body);
    if (!parsed.success || !UUID.test(parsed.data.member_id)) return reply.code(400).send(fail('invalid_request', 'Send {"member_id"} as JSON.'));
    const change = async () => {
      const m = await deps.members.remove(parsed.data.member_id.toLowerCase());
      await audit(request, m.account_id, 'console.RemoveMember', { member_id: m.id, email: m.email, role: m.role });
      return m;
    };
    return memberChange(reply, change, (m) => {
      request.log.info({ member: m.id }, 'member removed by operator');
      return { member_id: m.id, email: m.email, removed: true };
    });
  });
}

/** Runs a change to a member; an unknown member is 404, the last owner 400 with the reason. */
async function memberChange(reply: FastifyReply, change: () => Promise<MemberRow>, answer: (m: MemberRow) => Record<string, unknown>) {
  try {
    return answer(await change());
  } catch (err) {
    if (!(err instanceof MemberError)) throw err;
    if (err.reason === 'last-owner') return reply.code(400).send(fail('invalid_request', err.message));
    return reply.code(404).send(fail('not_found', 'No such member.'));
  }
}
