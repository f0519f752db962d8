import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RouteDeps } from '../deps.ts';
import { flashCookie } from '../http/flash.ts';
import { formField } from '../http/forms.ts';
import { setPasswordUrl } from '../http/origins.ts';
import { EMAIL_MAX, MemberError } from '../members/members.ts';
import { isRole, mayAssign } from '../members/roles.ts';
import type { Notice } from '../views/layout.ts';
import { membersPage, type InvitedLink } from '../views/members.view.ts';
import { viewerFor } from './viewer.ts';

type MemberRequest = FastifyRequest<{ Params: { id: string } }>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DONE: Record<string, Notice> = {
  'role-changed': { kind: 'success', text: 'The role is changed. It applies at the member’s next request.' },
  'member-removed': { kind: 'success', text: 'The member is removed and signed out everywhere.' },
};

function isInvited(value: unknown): value is InvitedLink {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.email === 'string' && typeof v.url === 'string' && isRole(v.role) && typeof v.expiresAt === 'string';
}

/** Owners and admins manage the account's members: invite, change roles, remove. */
export async function membersRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  const flash = flashCookie(deps.hmac, deps.cookies);
  const config = { config: { permission: 'members.manage' as const } };

  const show = async (request: FastifyRequest, reply: FastifyReply, extra: { notice?: Notice | undefined; invited?: InvitedLink; email?: string }, status = 200) => {
    const ctx = await viewerFor(request, deps);
    const [members, requireTotp] = await Promise.all([deps.members.list(ctx.member.accountId), deps.members.requiresTotp(ctx.member.accountId)]);
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .send(membersPage({ viewer: ctx.viewer, members, memberId: ctx.member.memberId, requireTotp, ...extra }).value);
  };

  /** Appends a change made by the signed-in member to the console's audit trail. */
  const audit = (request: FastifyRequest, action: string, details: Record<string, unknown>) =>
    deps.members.recordAudit({ accountId: request.memberSession!.member.accountId, actor: `member:${request.memberSession!.member.memberId}`, origin: request.ip, action, details });

  /** The member of the path, when it is one of this account's and the asker may manage their role. */
  async function target(request: MemberRequest) {
    const { member } = request.memberSession!;
    const found = UUID.test(request.params.id) ? await deps.members.byId(request.params.id.toLowerCase()) : null;
    if (!found || found.account_id !== member.accountId) return { status: 404 as const };
    if (found.id === member.memberId) return { status: 400 as const, text: 'You cannot change your own role or remove yourself here: ask another owner or admin.' };
    if (!mayAssign(member.role, found.role)) return { status: 403 as const };
    return { status: 200 as const, found };
  }

  app.get('/members', config, async (request, reply) => {
    const code = typeof request.query === 'object' && request.query !== null ? (request.query as Record<string, unknown>).done : undefined;
    const invited = flash.read(request, reply, request.memberSession!.idHash);
    return show(request, reply, {
      notice: typeof code === 'string' && Object.hasOwn(DONE, code) ? DONE[code] : undefined,
      ...(isInvited(invited) ? { invited } : {}),
    });
  });

  app.post('/members', config, async (request, reply) => {
    const { member } = request.memberSession!;
    const email = formField(request.body, 'email', EMAIL_MAX + 1);
    const role = formField(request.body, 'role', 16);
    if (!isRole(role)) return show(request, reply, { email, notice: { kind: 'error', text: 'Choose a role.' } }, 400);
    if (!mayAssign(member.role, role)) return show(request, reply, { email, notice: { kind: 'error', text: 'Only an owner can make another owner.' } }, 403);
    let created;
    try {
      created = await deps.members.create(member.accountId, email, role);
    } catch (err) {
      if (!(err instanceof MemberError)) throw err;
      return show(request, reply, { email, notice: { kind: 'error', text: err.message } }, err.reason === 'exists' ? 409 : 400);
    }
    const link = await deps.members.issueSetPasswordToken(created.memberId);
    await audit(request, 'console.InviteMember', { member_id: created.memberId, email: email.trim().toLowerCase(), role, created: created.created });
    request.log.info({ member: member.memberId, invited: created.memberId, role }, 'member invited');
    const invited: InvitedLink = { email: email.trim().toLowerCase(), role, url: setPasswordUrl(deps.linkOrigin(), link.token), expiresAt: link.expiresAt.toISOString() };
    flash.write(reply, request.memberSession!.idHash, invited);
    return reply.redirect('/members', 303);
  });

  /** Owners only: require two-step sign-in of every member (an owner who has it on themselves). */
  app.post('/members/require-totp', config, async (request, reply) => {
    const { member } = request.memberSession!;
    if (member.role !== 'owner') return show(request, reply, { notice: { kind: 'error', text: 'Only an owner can change what sign-in requires.' } }, 403);
    const required = formField(request.body, 'require_totp', 8) === 'yes';
    const own = await deps.members.secondFactors(member.memberId);
    if (required && !own.totp && !own.passkey) {
      return show(request, reply, { notice: { kind: 'error', text: 'Turn on your own two-step sign-in first (account page).' } }, 400);
    }
    await deps.members.setRequireTotp(member.accountId, required);
    await audit(request, 'console.SetRequireTotp', { required });
    request.log.info({ member: member.memberId, required }, 'two-step sign-in requirement changed');
    return reply.redirect(`/account?done=${required ? 'require-totp-on' : 'require-totp-off'}`, 303);
  });

  app.post<{ Params: { id: string } }>('/members/:id/role', config, async (request, reply) => {
    const role = formField(request.body, 'role', 16);
    const t = await target(request);
    if (t.status === 404) return reply.callNotFound();
    if (t.status === 400) return show(request, reply, { notice: { kind: 'error', text: t.text } }, 400);
    if (t.status === 403 || (isRole(role) && !mayAssign(request.memberSession!.member.role, role))) {
      return show(request, reply, { notice: { kind: 'error', text: 'Only an owner can give or take the owner role.' } }, 403);
    }
    if (!isRole(role)) return show(request, reply, { notice: { kind: 'error', text: 'Choose a role.' } }, 400);
    try {
      await deps.members.setRole(t.found.id, role);
    } catch (err) {
      if (err instanceof MemberError) return show(request, reply, { notice: { kind: 'error', text: err.message } }, 400);
      throw err;
    }
    await audit(request, 'console.SetRole', { member_id: t.found.id, email: t.found.email, from: t.found.role, to: role });
    request.log.info({ member: request.memberSession!.member.memberId, target: t.found.id, role }, 'member role changed');
    return reply.redirect('/members?done=role-changed', 303);
  });

  app.post<{ Params: { id: string } }>('/members/:id/remove', config, async (request, reply) => {
    const t = await target(request);
    if (t.status === 404) return reply.callNotFound();
    if (t.status === 400) return show(request, reply, { notice: { kind: 'error', text: t.text } }, 400);
    if (t.status === 403) return show(request, reply, { notice: { kind: 'error', text: 'Only an owner can remove an owner.' } }, 403);
    try {
      await deps.members.remove(t.found.id);
    } catch (err) {
      if (err instanceof MemberError) return show(request, reply, { notice: { kind: 'error', text: err.message } }, 400);
      throw err;
    }
    await audit(request, 'console.RemoveMember', { member_id: t.found.id, email: t.found.email, role: t.found.role });
    request.log.info({ member: request.memberSession!.member.memberId, target: t.found.id }, 'member removed');
    return reply.redirect('/members?done=member-removed', 303);
  });
}
