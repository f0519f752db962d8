import { GatewayError } from '@gw/errors';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RouteDeps } from '../deps.ts';
import { LIMIT_PERIODS, LIMIT_TYPES, toKeyView } from '../billing/key-view.ts';
import { reauthenticate, reauthNeeded } from '../auth/reauth.ts';
import { mayManageKey } from '../billing/guard.ts';
import { flashCookie } from '../http/flash.ts';
import { formField } from '../http/forms.ts';
import { keyPage, keysPage, KEY_NAME_MAX, type CreateForm } from '../views/keys.view.ts';
import type { Notice } from '../views/layout.ts';
import { instantOfLocal } from '../views/zoned-time.ts';
import { noticeFrom, viewerFor } from './viewer.ts';

type KeyRequest = FastifyRequest<{ Params: { id: string } }>;

const HTML = 'text/html; charset=utf-8';
const LIMIT_VALUE = /^(0|[1-9][0-9]{0,14})$/;

/** A key name is a label: control characters (line breaks, escapes) become spaces. */
/** A key name as shown: control characters become spaces; format characters (bidi overrides that reverse what follows) go. */
function cleanName(raw: string): string {
  return raw.replace(/[\p{Cc}]/gu, ' ').replace(/\p{Cf}/gu, '').trim();
}

/** A refusal from billing that the member can fix: shown on the page instead of an error page. */
function fixable(err: unknown): Notice | null {
  return err instanceof GatewayError && err.code === 'invalid_request' ? { kind: 'error', text: err.message } : null;
}

type CreatedKey = { name: string; apiKey: string; keyId: string };

function isCreatedKey(value: unknown): value is CreatedKey {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.name === 'string' && typeof v.apiKey === 'string' && typeof v.keyId === 'string';
}

export async function keysRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  // The new key's plaintext travels from the POST to the page of its redirect in a one-time flash.
  const flash = flashCookie(deps.hmac, deps.cookies);
  const listPage = async (request: FastifyRequest, reply: FastifyReply, extra: { created?: CreatedKey; form?: CreateForm; notice?: Notice }, status = 200) => {
    const ctx = await viewerFor(request, deps);
    const reauth = await reauthNeeded(request, deps);
    const [{ keys }, creators] = await Promise.all([request.billing.listKeyDetails({ accountId: ctx.member.accountId }), deps.members.keyCreators(ctx.member.accountId)]);
    const now = deps.now().getTime();
    const views = keys.map((k) => toKeyView(k, now));
    const manageable = new Set(views.filter((k) => mayManageKey(ctx.member, creators.get(k.id))).map((k) => k.id));
    return reply
      .code(status)
      .type(HTML)
      .send(keysPage({ viewer: ctx.viewer, keys: views, manageable, reauth, ...extra }).value);
  };

  const detailPage = async (request: KeyRequest, reply: FastifyReply, notice: Notice | undefined, status = 200) => {
    const ctx = await viewerFor(request, deps);
    const { key } = await request.billing.getKeyDetails({ accountId: ctx.member.accountId, keyId: request.params.id });
    const now = deps.now().getTime();
    if (!key) throw new GatewayError('not_found', 'No such API key.');
    const manageable = mayManageKey(ctx.member, await deps.members.keyCreator(request.params.id));
    return reply.code(status).type(HTML).send(keyPage({ viewer: ctx.viewer, key: toKeyView(key, now), manageable, nowMs: now, notice }).value);
  };

  /** Runs a change to a key; a fixable refusal re-renders the key page with the reason. */
  const change = async (request: KeyRequest, reply: FastifyReply, done: string, action: (accountId: string) => Promise<unknown>) => {
    try {
      await action(request.memberSession!.member.accountId);
    } catch (err) {
      const notice = fixable(err);
      if (!notice) throw err;
      return detailPage(request, reply, notice, 400);
    }
    request.log.info({ member: request.memberSession!.member.memberId, key: request.params.id, action: done }, 'key changed');
    return reply.redirect(`/keys/${encodeURIComponent(request.params.id)}?done=${done}`, 303);
  };

  app.get('/keys', { config: { permission: 'keys.view' } }, async (request, reply) => {
    const notice = noticeFrom(request.query);
    const created = flash.read(request, reply, request.memberSession!.idHash);
    return listPage(request, reply, { ...(notice ? { notice } : {}), ...(isCreatedKey(created) ? { created } : {}) });
  });

  app.post('/keys', { config: { permission: 'keys.create' } }, async (request, reply) => {
    const form: CreateForm = {
      name: cleanName(formField(request.body, 'name', KEY_NAME_MAX)),
      expires: formField(request.body, 'expires_at', 32),
    };
    const ctx = await viewerFor(request, deps);
    // A key spends the account's credits: a session that proved who it is long ago proves it again.
    const refused = await reauthenticate(request, reply, deps);
    if (refused) return listPage(request, reply, { form, notice: refused.notice }, refused.status);
    let expiresAtUnixMs = 0n;
    if (form.expires !== '') {
      const at = instantOfLocal(form.expires, ctx.viewer.timeZone);
      if (!at) return listPage(request, reply, { form, notice: { kind: 'error', text: 'The expiry is not a date and time.' } }, 400);
      expiresAtUnixMs = BigInt(at.getTime());
    }
    // A cap on keys per account (revoked ones do not count): a leaked session cannot mint thousands.
    const { keys: existing } = await request.billing.listKeyDetails({ accountId: ctx.member.accountId });
    const live = existing.filter((k) => (k.info?.revokedAtUnixMs ?? 0n) === 0n).length;
    if (live >= deps.maxKeysPerAccount) {
      return listPage(request, reply, { form, notice: { kind: 'error', text: `This account has ${live} keys, the most it may have. Revoke keys it no longer uses, then create this one.` } }, 400);
    }
    let created;
    try {
      created = await request.billing.createApiKey({ accountId: ctx.member.accountId, name: form.name, expiresAtUnixMs });
    } catch (err) {
      const notice = fixable(err);
      if (!notice) throw err;
      return listPage(request, reply, { form, notice }, 400);
    }
    await deps.members.recordKeyCreator(created.keyId, ctx.member.accountId, ctx.member.memberId);
    request.log.info({ member: ctx.member.memberId, key: created.keyId }, 'key created');
    // Post, redirect, get: a refresh of the page shows the list, it does not create a second key.
    // The plaintext is shown once, by the page of the redirect, from a sealed one-time flash
    // (never in the URL; every page is no-store).
    flash.write(reply, request.memberSession!.idHash, { name: form.name, apiKey: created.apiKey, keyId: created.keyId } satisfies CreatedKey);
    return reply.redirect('/keys', 303);
  });

  app.get<{ Params: { id: string } }>('/keys/:id', { config: { permission: 'keys.view' } }, async (request, reply) => detailPage(request, reply, noticeFrom(request.query)));

  app.post<{ Params: { id: string } }>('/keys/:id/revoke', { config: { permission: 'keys.create' } }, async (request, reply) => {
    if (formField(request.body, 'confirm', 8) !== 'yes') {
      return detailPage(request, reply, { kind: 'error', text: 'Tick the box to confirm the revocation.' }, 400);
    }
    return change(request, reply, 'key-revoked', (accountId) => request.billing.revokeAccountKey({ accountId, keyId: request.params.id }));
  });

  app.post<{ Params: { id: string } }>('/keys/:id/limits', { config: { permission: 'keys.create' } }, async (request, reply) => {
    const limitType = formField(request.body, 'limit_type', 16);
    const period = formField(request.body, 'period', 16);
    const value = formField(request.body, 'value', 16).trim();
    if (!(LIMIT_TYPES as readonly string[]).includes(limitType) || !(LIMIT_PERIODS as readonly string[]).includes(period)) {
      return detailPage(request, reply, { kind: 'error', text: 'Choose a limit and a period.' }, 400);
    }
    if (!LIMIT_VALUE.test(value)) {
      return detailPage(request, reply, { kind: 'error', text: 'The value must be a whole number from 0 to 999,999,999,999,999.' }, 400);
    }
    return change(request, reply, 'limit-saved', (accountId) =>
      request.billing.setAccountKeyLimit({ accountId, keyId: request.params.id, limitType, period, value: BigInt(value) }),
    );
  });

  app.post<{ Params: { id: string } }>('/keys/:id/limits/clear', { config: { permission: 'keys.create' } }, async (request, reply) => {
    const limitType = formField(request.body, 'limit_type', 16);
    const period = formField(request.body, 'period', 16);
    return change(request, reply, 'limit-removed', (accountId) =>
      request.billing.clearAccountKeyLimit({ accountId, keyId: request.params.id, limitType, period }),
    );
  });

  app.post<{ Params: { id: string } }>('/keys/:id/expiry', { config: { permission: 'keys.create' } }, async (request, reply) => {
    const raw = formField(request.body, 'expires_at', 32);
    let expiresAtUnixMs = 0n;
    if (raw !== '') {
      const ctx = await viewerFor(request, deps);
      const at = instantOfLocal(raw, ctx.viewer.timeZone);
      if (!at) return detailPage(request, reply, { kind: 'error', text: 'The expiry is not a date and time.' }, 400);
      expiresAtUnixMs = BigInt(at.getTime());
    }
    return change(request, reply, expiresAtUnixMs === 0n ? 'expiry-removed' : 'expiry-saved', (accountId) =>
      request.billing.setKeyExpiry({ accountId, keyId: request.params.id, expiresAtUnixMs }),
    );
  });
}
