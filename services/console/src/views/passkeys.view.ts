import type { PasskeyListing } from '../auth/passkeys.ts';
import { PASSWORD_MAX } from '../auth/passwords.ts';
import { formatTime } from './format.ts';
import { html, type SafeHtml } from './html.ts';

/** A ceremony's options for the browser and the handle of its server-side challenge. */
export interface PasskeyChallenge {
  options: object;
  handle: string;
}

/**
 * The fields a form needs to answer a passkey challenge (`/assets/passkeys.js` fills the response
 * and submits the form): the challenge's handle, the response, the button and a status line.
 */
export function passkeyFields(challenge: PasskeyChallenge, kind: 'create' | 'get', prefix: string, label: string): SafeHtml {
  const options = JSON.stringify(challenge.options);
  return html`<input type="hidden" name="${prefix}handle" value="${challenge.handle}">
<input type="hidden" name="${prefix}response" value="" data-passkey-response>
${kind === 'create' ? html`<button type="button" data-passkey-button data-passkey-create="${options}">${label}</button>` : html`<button type="button" data-passkey-button data-passkey-get="${options}">${label}</button>`}
<p data-passkey-status role="status" aria-live="polite"></p>`;
}

/** The passkeys list of the account page (names, dates and a remove button each). */
export function passkeyRows(list: PasskeyListing[], zone: string, csrf: SafeHtml, removable: boolean): SafeHtml {
  if (list.length === 0) return html`<p>No passkeys yet.</p>`;
  return html`<table id="passkeys">
  <thead><tr><th scope="col">Name</th><th scope="col">Added</th><th scope="col">Last used</th><th scope="col"></th></tr></thead>
  <tbody>${list.map(
    (p) => html`<tr><td>${p.name}</td><td>${formatTime(p.createdAt.getTime(), zone)}</td><td>${p.lastUsedAt ? formatTime(p.lastUsedAt.getTime(), zone) : 'never'}</td>
    <td>${removable ? html`<form method="post" action="/account/passkeys/remove">${csrf}<input type="hidden" name="passkey" value="${p.id}"><button type="submit" class="secondary">Remove</button></form>` : ''}</td></tr>`,
  )}</tbody>
</table>`;
}

/** What a re-authentication asks for: password (and code with TOTP on), or a passkey of the member's. */
export interface ReauthAsk {
  totp: boolean;
  /** The member has passkeys: a challenge to answer with one. */
  passkey?: PasskeyChallenge | undefined;
}

/** The "confirm it is you" fields of a form (`reauthenticate()` reads them). */
export function reauthFields(email: string, ask: ReauthAsk): SafeHtml {
  const passwordOffered = ask.totp || !ask.passkey;
  return html`<fieldset>
  <legend>Confirm it is you (you signed in a while ago)</legend>
  <input type="text" name="username" autocomplete="username" value="${email}" hidden>
  ${
    passwordOffered
      ? html`<div class="grid"><div><label for="reauth-password">Your password</label>
    <input id="reauth-password" name="reauth_password" type="password" autocomplete="current-password" required maxlength="${PASSWORD_MAX}" data-passkey-alternative></div>
  ${ask.totp ? html`<div><label for="reauth-code">Code from your app</label>
    <input id="reauth-code" name="reauth_code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="7" required data-passkey-alternative></div>` : ''}</div>`
      : ''
  }
  ${ask.passkey ? passkeyFields(ask.passkey, 'get', 'reauth_passkey_', passwordOffered ? 'Or use a passkey' : 'Use a passkey') : ''}
</fieldset>`;
}
