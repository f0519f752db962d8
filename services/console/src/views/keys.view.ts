import { describeLimit, LIMIT_PERIODS, LIMIT_TYPES, type KeyView } from '../billing/key-view.ts';
import { formatInteger, formatTime, isoTime } from './format.ts';
import { html, type SafeHtml } from './html.ts';
import { reauthFields, type ReauthAsk } from './passkeys.view.ts';
import { csrfField, page, tableScroll, type Notice, type Viewer } from './layout.ts';
import { localInputValue } from './zoned-time.ts';

export const KEY_NAME_MAX = 100;

const STATUS_LABEL = { active: 'Active', expired: 'Expired', revoked: 'Revoked' } as const;

function when(unixMs: bigint, viewer: Viewer, never: string): SafeHtml {
  return unixMs > 0n ? html`<time datetime="${isoTime(unixMs)}">${formatTime(unixMs, viewer.timeZone)}</time>` : html`${never}`;
}

function limitsText(key: KeyView): SafeHtml {
  if (key.limits.length === 0) return html`<span class="muted">None</span>`;
  return html`<ul class="plain">${key.limits.map((l) => html`<li>${describeLimit(l, formatInteger)}</li>`)}</ul>`;
}

/** The one time the plaintext is on a page: in the response to the create form, never stored. */
function createdKeyBox(created: { name: string; apiKey: string; keyId: string }): SafeHtml {
  return html`<article class="new-key" aria-labelledby="new-key-heading">
  <h2 id="new-key-heading">Your new key${created.name ? html` “${created.name}”` : ''}</h2>
  <p class="warning" role="alert"><strong>Copy this key now. It will not be shown again</strong>: we store only a fingerprint of it. Anyone who has it can spend your credits, so keep it in a secret store on your server and never in a browser or app.</p>
  <div class="key-reveal" role="group" aria-label="New API key">
    <input id="new-key-value" type="text" readonly value="${created.apiKey}" aria-label="New API key (plaintext, shown once)" spellcheck="false" autocomplete="off">
    <button type="button" data-copy-target="new-key-value" aria-describedby="copy-status">Copy</button>
  </div>
  <p id="copy-status" class="muted" role="status" aria-live="polite"></p>
  <p><a href="/keys/${created.keyId}">Set limits or an expiry for this key</a></p>
</article>`;
}

export interface CreateForm {
  name: string;
  expires: string;
}

export function keysPage(opts: {
  viewer: Viewer;
  keys: KeyView[];
  /** The keys this member may change (every key for owners and admins, their own for developers). */
  manageable: ReadonlySet<string>;
  /** Creating a key asks for the password (and a code, with two-step sign-in) again. */
  reauth?: ReauthAsk | undefined;
  created?: { name: string; apiKey: string; keyId: string } | undefined;
  form?: CreateForm | undefined;
  notice?: Notice | undefined;
}): SafeHtml {
  const { viewer, keys } = opts;
  const body = html`<h1>API keys</h1>
${opts.created ? createdKeyBox(opts.created) : ''}
<section aria-labelledby="list-heading">
  <h2 id="list-heading">Your keys</h2>
  ${
    keys.length === 0
      ? html`<p>No keys yet. Create one below.</p>`
      : tableScroll('API keys', html`<table class="striped keys-table">
    <caption class="visually-hidden">API keys of this account, newest first</caption>
    <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col">Status</th><th scope="col">Limits</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>${keys.map(
      (k) => html`<tr data-key-id="${k.id}">
      <th scope="row">${k.name || html`<span class="muted">(no name)</span>`}</th>
      <td><code>${k.display}</code></td>
      <td>${when(k.createdAt, viewer, '')}</td>
      <td>${when(k.lastUsedAt, viewer, 'Never')}</td>
      <td>${when(k.expiresAt, viewer, 'Never')}</td>
      <td><span class="status status-${k.status}">${STATUS_LABEL[k.status]}</span></td>
      <td>${limitsText(k)}</td>
      <td><a href="/keys/${k.id}">${opts.manageable.has(k.id) ? 'Manage' : 'View'}<span class="visually-hidden"> key ${k.name || k.display}</span></a></td>
    </tr>`,
    )}</tbody>
  </table>`)
  }
</section>
${
  viewer.permissions.has('keys.create')
    ? html`<section aria-labelledby="create-heading">
  <h2 id="create-heading">Create a key</h2>
  <form method="post" action="/keys" class="create-key">
    ${csrfField(viewer.csrf)}
    <div class="grid">
      <div>
        <label for="key-name">Name</label>
        <input id="key-name" name="name" type="text" maxlength="${KEY_NAME_MAX}" value="${opts.form?.name ?? ''}" aria-describedby="key-name-help">
        <small id="key-name-help">To recognise it later, e.g. “production server”.</small>
      </div>
      <div>
        <label for="key-expires">Expires (optional, ${viewer.timeZone})</label>
        <input id="key-expires" name="expires_at" type="datetime-local" value="${opts.form?.expires ?? ''}">
      </div>
    </div>
    ${
      opts.reauth ? reauthFields(viewer.email, opts.reauth) : ''
    }
    <button type="submit">Create key</button>
  </form>
</section>`
    : html`<p class="muted">Your role (${viewer.role}) can see the keys but not create them.</p>`
}`;
  return page({ title: 'API keys', path: '/keys', viewer, notice: opts.notice, body });
}

const TYPE_LABEL: Record<string, string> = { spending: 'Spending (credits)', requests: 'Requests', tokens: 'Tokens' };
const PERIOD_LABEL: Record<string, string> = { daily: 'Per day', monthly: 'Per month', lifetime: 'Lifetime' };

export function keyPage(opts: { viewer: Viewer; key: KeyView; manageable: boolean; nowMs: number; notice?: Notice | undefined }): SafeHtml {
  const { viewer, key } = opts;
  // Forms only for a member who may change this key; others see it read-only.
  const active = key.status !== 'revoked' && opts.manageable;
  const body = html`<p><a href="/keys">← All keys</a></p>
<h1>Key ${key.name ? html`“${key.name}”` : html`<code>${key.display}</code>`}</h1>
<dl class="key-facts">
  <dt>Key</dt><dd><code>${key.display}</code></dd>
  <dt>Status</dt><dd><span class="status status-${key.status}">${STATUS_LABEL[key.status]}</span>${key.revokedAt > 0n ? html` since ${when(key.revokedAt, viewer, '')}` : ''}</dd>
  <dt>Created</dt><dd>${when(key.createdAt, viewer, '')}</dd>
  <dt>Last used</dt><dd>${when(key.lastUsedAt, viewer, 'Never')}</dd>
  <dt>Expires</dt><dd>${when(key.expiresAt, viewer, 'Never')}</dd>
</dl>
<p><a href="/usage?key=${key.id}">Usage of this key</a></p>

<section aria-labelledby="limits-heading">
  <h2 id="limits-heading">Limits</h2>
  <p>A request that would go over a limit is refused with <code>api_key_limit_exceeded</code>. Days and months are calendar periods in the account's time zone.</p>
  ${
    key.limits.length === 0
      ? html`<p>This key has no limits.</p>`
      : tableScroll('Limits of this key', html`<table class="limits-table">
    <caption class="visually-hidden">Limits of this key</caption>
    <thead><tr><th scope="col">Limit</th><th scope="col">Period</th><th scope="col" class="num">Value</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>${key.limits.map(
      (l) => html`<tr><td>${TYPE_LABEL[l.type] ?? l.type}</td><td>${PERIOD_LABEL[l.period] ?? l.period}</td><td class="num">${formatInteger(l.value)}</td>
      <td>${
        active
          ? html`<form method="post" action="/keys/${key.id}/limits/clear" class="inline-form">${csrfField(viewer.csrf)}
        <input type="hidden" name="limit_type" value="${l.type}"><input type="hidden" name="period" value="${l.period}">
        <button type="submit" class="secondary outline small">Remove<span class="visually-hidden"> ${TYPE_LABEL[l.type] ?? l.type} limit ${PERIOD_LABEL[l.period] ?? l.period}</span></button></form>`
          : ''
      }</td></tr>`,
    )}</tbody></table>`)
  }
  ${
    active
      ? html`<form method="post" action="/keys/${key.id}/limits" class="limit-form">
    ${csrfField(viewer.csrf)}
    <fieldset class="grid">
      <legend>Set a limit</legend>
      <div><label for="limit-type">Limit</label>
        <select id="limit-type" name="limit_type" required>${LIMIT_TYPES.map((t) => html`<option value="${t}">${TYPE_LABEL[t]}</option>`)}</select></div>
      <div><label for="limit-period">Period</label>
        <select id="limit-period" name="period" required>${LIMIT_PERIODS.map((p) => html`<option value="${p}">${PERIOD_LABEL[p]}</option>`)}</select></div>
      <div><label for="limit-value">Value</label>
        <input id="limit-value" name="value" type="number" inputmode="numeric" min="0" max="999999999999999" step="1" required></div>
    </fieldset>
    <button type="submit">Save limit</button>
  </form>`
      : ''
  }
</section>

${
  active
    ? html`<section aria-labelledby="expiry-heading">
  <h2 id="expiry-heading">Expiry</h2>
  <form method="post" action="/keys/${key.id}/expiry" class="expiry-form">
    ${csrfField(viewer.csrf)}
    <label for="expires-at">Expires at (${viewer.timeZone})</label>
    <input id="expires-at" name="expires_at" type="datetime-local" required value="${key.expiresAt > 0n ? localInputValue(Number(key.expiresAt), viewer.timeZone) : ''}" min="${localInputValue(opts.nowMs, viewer.timeZone)}">
    <button type="submit">Save expiry</button>
  </form>
  ${
    key.expiresAt > 0n
      ? html`<form method="post" action="/keys/${key.id}/expiry" class="inline-form">${csrfField(viewer.csrf)}<input type="hidden" name="expires_at" value="">
    <button type="submit" class="secondary outline">Remove expiry</button></form>`
      : ''
  }
</section>

<section aria-labelledby="revoke-heading" class="danger-zone">
  <h2 id="revoke-heading">Revoke</h2>
  <p>Revoking is immediate and cannot be undone: the next request with this key is refused with <code>auth_revoked</code>. Revoke a key as soon as you suspect it leaked.</p>
  <form method="post" action="/keys/${key.id}/revoke">
    ${csrfField(viewer.csrf)}
    <label><input type="checkbox" name="confirm" value="yes" required> I understand that apps using this key stop working now</label>
    <button type="submit" class="danger">Revoke key</button>
  </form>
</section>`
    : ''
}`;
  return page({ title: `Key ${key.name || key.display}`, path: '/keys', viewer, notice: opts.notice, body });
}
