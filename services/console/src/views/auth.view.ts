import { PASSWORD_MAX, PASSWORD_MIN } from '../auth/passwords.ts';
import { EMAIL_MAX } from '../members/members.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, publicPage, type Notice } from './layout.ts';
import { passkeyFields, type PasskeyChallenge } from './passkeys.view.ts';

export function loginPage(opts: { csrf: string; email?: string; next?: string; notice?: Notice | undefined }): SafeHtml {
  return publicPage({
    title: 'Sign in',
    notice: opts.notice,
    body: html`<h1>Sign in</h1>
<p>Sign in to manage your account's API keys and see its usage and balance.</p>
<form method="post" action="/login">
  ${csrfField(opts.csrf)}
  ${opts.next ? html`<input type="hidden" name="next" value="${opts.next}">` : ''}
  <label for="email">E-mail</label>
  <input id="email" name="email" type="email" autocomplete="username" required maxlength="${EMAIL_MAX}" value="${opts.email ?? ''}" autofocus>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="${PASSWORD_MAX}">
  <button type="submit">Sign in</button>
</form>
<p><small>No password yet, or forgot it? Ask your operator for a set-password link.</small></p>`,
  });
}

export function setPasswordPage(opts: { csrf: string; token: string; email: string; notice?: Notice | undefined }): SafeHtml {
  return publicPage({
    title: 'Choose a password',
    notice: opts.notice,
    body: html`<h1>Choose a password</h1>
<p>For <strong>${opts.email}</strong>. This link works once.</p>
<form method="post" action="/set-password">
  ${csrfField(opts.csrf)}
  <input type="hidden" name="token" value="${opts.token}">
  <input type="text" name="username" autocomplete="username" value="${opts.email}" hidden>
  <label for="password">New password</label>
  <input id="password" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" aria-describedby="password-help">
  <small id="password-help">At least ${PASSWORD_MIN} characters, not a common or easily guessed password: a passphrase of several unrelated words is best.</small>
  <label for="confirm">Repeat the new password</label>
  <input id="confirm" name="confirm" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}">
  <button type="submit">Set password</button>
</form>`,
  });
}

export function invalidLinkPage(): SafeHtml {
  return publicPage({
    title: 'Link not valid',
    body: html`<h1>This link is not valid</h1>
<p>Set-password links work once and expire. Ask your operator for a new one.</p>
<p><a href="/login">Go to sign in</a></p>`,
  });
}

/** Plain message page for errors outside the signed-in layout. */
export function messagePage(title: string, text: string): SafeHtml {
  return publicPage({ title, body: html`<h1>${title}</h1><p>${text}</p><p><a href="/keys">Back to the console</a></p>` });
}

/** A page the member's role does not allow. */
export function forbiddenPage(role: string): SafeHtml {
  return publicPage({
    title: 'Not allowed',
    body: html`<h1>Not allowed</h1><p>Your role in this account (${role}) does not allow this. Ask an owner or admin of the account if you need it.</p><p><a href="/">Back to the console</a></p>`,
  });
}

/** The second sign-in step: a code from the member's authenticator app. */
/** The second sign-in step: a code from the authenticator app, or a passkey, whichever the member has. */
export function totpPage(opts: { csrf: string; totp?: boolean; passkey?: PasskeyChallenge | undefined; notice?: Notice | undefined }): SafeHtml {
  const totp = opts.totp ?? true;
  return publicPage({
    title: 'Two-step sign-in',
    notice: opts.notice,
    body: html`<h1>Two-step sign-in</h1>
${
  opts.passkey
    ? html`<form method="post" action="/login/passkey" id="passkey-sign-in">
  ${csrfField(opts.csrf)}
  <p>Use your passkey (your device's screen lock or security key) to finish signing in.</p>
  ${passkeyFields(opts.passkey, 'get', 'passkey_', 'Sign in with a passkey')}
</form>`
    : ''
}
${
  totp
    ? html`<p>${opts.passkey ? 'Or enter' : 'Enter'} the 6-digit code your authenticator app shows for the Gateway console.</p>
<form method="post" action="/login/code">
  ${csrfField(opts.csrf)}
  <label for="code">Code</label>
  <input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxlength="7" required${opts.passkey ? '' : html` autofocus`}>
  <button type="submit">Sign in</button>
</form>`
    : ''
}
<p><small>Lost your ${totp ? 'app' : 'passkey'}? Ask your account owner or operator for a reset.</small></p>`,
  });
}
