import type { MemberListing } from '../members/members.ts';
import { mayAssign, ROLE_LABEL, ROLES, type Role } from '../members/roles.ts';
import { EMAIL_MAX } from '../members/members.ts';
import { formatTime } from './format.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, page, tableScroll, type Notice, type Viewer } from './layout.ts';

export interface InvitedLink {
  email: string;
  role: Role;
  url: string;
  expiresAt: string;
}

/** The one time an invitation link is on a page: in the page after the invite form, never stored. */
function invitedBox(invited: InvitedLink): SafeHtml {
  return html`<article class="new-key" aria-labelledby="invited-heading">
  <h2 id="invited-heading">Invitation for ${invited.email} (${invited.role})</h2>
  <p class="warning" role="alert"><strong>Send this one-time link to ${invited.email} now. It will not be shown again</strong> and works once, until ${invited.expiresAt}. Whoever opens it chooses the password.</p>
  <div class="key-reveal" role="group" aria-label="Invitation link">
    <input id="invite-link" type="text" readonly value="${invited.url}" aria-label="Invitation link (shown once)" spellcheck="false" autocomplete="off">
    <button type="button" data-copy-target="invite-link" aria-describedby="copy-status">Copy</button>
  </div>
  <p id="copy-status" class="muted" role="status" aria-live="polite"></p>
</article>`;
}

function roleOptions(viewer: Viewer, selected: Role): SafeHtml[] {
  return ROLES.filter((r) => mayAssign(viewer.role, r) || r === selected).map(
    (r) => html`<option value="${r}"${r === selected ? html` selected` : ''}${mayAssign(viewer.role, r) ? '' : html` disabled`}>${ROLE_LABEL[r]}</option>`,
  );
}

export function membersPage(opts: { viewer: Viewer; members: MemberListing[]; memberId: string; requireTotp: boolean; invited?: InvitedLink | undefined; notice?: Notice | undefined; email?: string }): SafeHtml {
  const { viewer } = opts;
  const body = html`<h1>Members</h1>
${opts.invited ? invitedBox(opts.invited) : ''}
<section aria-labelledby="members-heading">
  <h2 id="members-heading">Members of ${viewer.accountName}</h2>
  <p>${Object.values(ROLE_LABEL).join('. ')}. An account always keeps one owner.</p>
  ${tableScroll('Members', html`<table class="striped members-table">
    <caption class="visually-hidden">Members of this account</caption>
    <thead><tr><th scope="col">E-mail</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col">Two-step</th><th scope="col">Added</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>${opts.members.map((m) => {
      const manageable = mayAssign(viewer.role, m.role) && m.memberId !== opts.memberId;
      return html`<tr data-member-id="${m.memberId}">
      <th scope="row">${m.email}${m.memberId === opts.memberId ? html` <small class="muted">(you)</small>` : ''}</th>
      <td>${
        manageable
          ? html`<form method="post" action="/members/${m.memberId}/role" class="inline-form">${csrfField(viewer.csrf)}
        <label class="visually-hidden" for="role-${m.memberId}">Role of ${m.email}</label>
        <select id="role-${m.memberId}" name="role">${roleOptions(viewer, m.role)}</select>
        <button type="submit" class="secondary outline small">Change role<span class="visually-hidden"> of ${m.email}</span></button></form>`
          : m.role
      }</td>
      <td>${m.active ? 'Active' : 'Invited (no password yet)'}</td>
      <td>${m.totp ? 'On' : 'Off'}</td>
      <td><time datetime="${m.createdAt.toISOString()}">${formatTime(BigInt(m.createdAt.getTime()), viewer.timeZone)}</time></td>
      <td>${
        manageable
          ? html`<form method="post" action="/members/${m.memberId}/remove" class="inline-form">${csrfField(viewer.csrf)}
        <button type="submit" class="danger small">Remove<span class="visually-hidden"> ${m.email}</span></button></form>`
          : ''
      }</td>
    </tr>`;
    })}</tbody></table>`)}
</section>
<section aria-labelledby="require-heading">
  <h2 id="require-heading">Two-step sign-in for everyone</h2>
  <p>${opts.requireTotp ? 'Required: a member without it can only open their account page, to set it up.' : 'Not required: each member chooses.'}</p>
  ${
    viewer.role === 'owner'
      ? html`<form method="post" action="/members/require-totp">
    ${csrfField(viewer.csrf)}
    <input type="hidden" name="require_totp" value="${opts.requireTotp ? 'no' : 'yes'}">
    <button type="submit" class="secondary">${opts.requireTotp ? 'Stop requiring two-step sign-in' : 'Require two-step sign-in of every member'}</button>
  </form>`
      : html`<p class="muted">Only an owner can change this.</p>`
  }
</section>
<section aria-labelledby="invite-heading">
  <h2 id="invite-heading">Invite a member</h2>
  <form method="post" action="/members" class="invite-form">
    ${csrfField(viewer.csrf)}
    <div class="grid">
      <div>
        <label for="invite-email">E-mail</label>
        <input id="invite-email" name="email" type="email" required maxlength="${EMAIL_MAX}" value="${opts.email ?? ''}">
      </div>
      <div>
        <label for="invite-role">Role</label>
        <select id="invite-role" name="role">${roleOptions(viewer, 'developer')}</select>
      </div>
    </div>
    <button type="submit">Invite</button>
  </form>
  <p class="muted">You get a one-time link to send to the person; it works once and expires.</p>
</section>`;
  return page({ title: 'Members', path: '/members', viewer, notice: opts.notice, body });
}
