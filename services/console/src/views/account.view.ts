import { PASSWORD_MAX, PASSWORD_MIN } from '../auth/passwords.ts';
import type { MemberNotice } from '../members/members.ts';
import { formatTime } from './format.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, page, tableScroll, type Notice, type Viewer } from './layout.ts';
import { passkeyFields, passkeyRows, reauthFields, type PasskeyChallenge, type ReauthAsk } from './passkeys.view.ts';
import type { PasskeyListing } from '../auth/passkeys.ts';

export function accountPage(opts: {
  viewer: Viewer;
  accountTimeZone: string;
  memberTimeZone: string | null;
  zones: string[];
  notices: MemberNotice[];
  totp: { enabled: boolean; setup?: { secret: string; uri: string } | undefined };
  /** Undefined: passkeys are off (no public URL configured). */
  passkeys?: { list: PasskeyListing[]; reauth: ReauthAsk | undefined; setup?: PasskeyChallenge | undefined } | undefined;
  sessions: Array<{ handle: string; createdAt: Date; lastSeenAt: Date; userAgent: string; network: string; current: boolean }>;
  notice?: Notice | undefined;
}): SafeHtml {
  const { viewer } = opts;
  const body = html`<h1>Account</h1>
<dl class="key-facts">
  <dt>Signed in as</dt><dd>${viewer.email}</dd>
  <dt>Account</dt><dd>${viewer.accountName} <small class="muted">(${viewer.accountId})</small></dd>
  <dt>Account time zone</dt><dd>${opts.accountTimeZone} <small class="muted">(key limit days and months follow it)</small></dd>
</dl>

<section aria-labelledby="notices-heading">
  <h2 id="notices-heading">Security notices</h2>
  ${
    opts.notices.length === 0
      ? html`<p class="muted">Nothing has happened to your sign-in yet.</p>`
      : html`<ul class="security-notices">${opts.notices.map(
          (n) => html`<li${n.seen ? '' : html` class="unseen"`}><time datetime="${n.createdAt.toISOString()}">${formatTime(BigInt(n.createdAt.getTime()), viewer.timeZone)}</time> ${n.seen ? '' : html`<strong>New:</strong> `}${n.text}</li>`,
        )}</ul>`
  }
</section>

<section aria-labelledby="password-heading">
  <h2 id="password-heading">Change password</h2>
  <form method="post" action="/account/password">
    ${csrfField(viewer.csrf)}
    <input type="text" name="username" autocomplete="username" value="${viewer.email}" hidden>
    <label for="current">Current password</label>
    <input id="current" name="current" type="password" autocomplete="current-password" required maxlength="${PASSWORD_MAX}">
    <label for="new-password">New password</label>
    <input id="new-password" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" aria-describedby="new-password-help">
    <small id="new-password-help">At least ${PASSWORD_MIN} characters, not a common or easily guessed password: a passphrase of several unrelated words is best. Your other sessions end when it changes.</small>
    <label for="confirm">Repeat the new password</label>
    <input id="confirm" name="confirm" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}">
    <button type="submit">Change password</button>
  </form>
</section>

<section aria-labelledby="totp-heading">
  <h2 id="totp-heading">Two-step sign-in</h2>
  ${
    opts.totp.enabled
      ? html`<p><strong>On.</strong> Signing in asks for a code from your authenticator app.</p>
  <form method="post" action="/account/totp/disable">
    ${csrfField(viewer.csrf)}
    <input type="text" name="username" autocomplete="username" value="${viewer.email}" hidden>
    <div class="grid">
      <div><label for="totp-off-current">Password</label>
        <input id="totp-off-current" name="current" type="password" autocomplete="current-password" required maxlength="${PASSWORD_MAX}"></div>
      <div><label for="totp-off-code">Current code</label>
        <input id="totp-off-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="7" required></div>
    </div>
    <button type="submit" class="secondary">Turn off two-step sign-in</button>
  </form>`
      : opts.totp.setup
        ? html`<p>Add this key to your authenticator app (type it in, or open the link on a phone that has the app), then enter the code it shows. It is shown only now.</p>
  <p><code id="totp-secret">${opts.totp.setup.secret}</code></p>
  <p><a href="${opts.totp.setup.uri}" id="totp-uri">Open in an authenticator app</a></p>
  <form method="post" action="/account/totp/confirm">
    ${csrfField(viewer.csrf)}
    <label for="totp-code">Code from the app</label>
    <input id="totp-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="7" required>
    <button type="submit">Turn on two-step sign-in</button>
  </form>`
        : html`<p>Off. With it on, signing in also asks for a code from an authenticator app, so a stolen password alone signs nobody in.</p>
  <form method="post" action="/account/totp/start">
    ${csrfField(viewer.csrf)}
    <button type="submit">Set up two-step sign-in</button>
  </form>`
  }
</section>

${opts.passkeys ? passkeysSection(viewer, opts.passkeys) : ''}
<section aria-labelledby="tz-heading">
  <h2 id="tz-heading">Display time zone</h2>
  <form method="post" action="/account/time-zone">
    ${csrfField(viewer.csrf)}
    <label for="time-zone">Show times in</label>
    <select id="time-zone" name="time_zone">
      <option value=""${opts.memberTimeZone === null ? html` selected` : ''}>The account's time zone (${opts.accountTimeZone})</option>
      ${opts.zones.map((z) => html`<option value="${z}"${z === opts.memberTimeZone ? html` selected` : ''}>${z}</option>`)}
    </select>
    <button type="submit">Save</button>
  </form>
</section>

<section aria-labelledby="sessions-heading">
  <h2 id="sessions-heading">Sessions</h2>
  <p>Where you are signed in. End any session you do not recognise, then change your password.</p>
  ${tableScroll('Your sessions', html`<table class="striped sessions-table">
    <caption class="visually-hidden">Your active sessions, most recently used first</caption>
    <thead><tr><th scope="col">Browser</th><th scope="col">Network</th><th scope="col">Signed in</th><th scope="col">Last active</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>${opts.sessions.map(
      (x) => html`<tr data-session="${x.handle}">
      <td>${x.userAgent || html`<span class="muted">unknown</span>`}${x.current ? html` <strong>(this session)</strong>` : ''}</td>
      <td>${x.network}</td>
      <td><time datetime="${x.createdAt.toISOString()}">${formatTime(BigInt(x.createdAt.getTime()), viewer.timeZone)}</time></td>
      <td><time datetime="${x.lastSeenAt.toISOString()}">${formatTime(BigInt(x.lastSeenAt.getTime()), viewer.timeZone)}</time></td>
      <td>${
        x.current
          ? ''
          : html`<form method="post" action="/account/sessions/end" class="inline-form">${csrfField(viewer.csrf)}<input type="hidden" name="session" value="${x.handle}">
        <button type="submit" class="secondary outline small">End<span class="visually-hidden"> this session</span></button></form>`
      }</td>
    </tr>`,
    )}</tbody></table>`)}
  <p>"Log out everywhere" signs you out on every device and browser, this one included.</p>
  <form method="post" action="/account/logout-all">
    ${csrfField(viewer.csrf)}
    <button type="submit" class="secondary">Log out everywhere</button>
  </form>
</section>`;
  return page({ title: 'Account', path: '/account', viewer, notice: opts.notice, body });
}

/** Passkeys: listed with a remove button each, added in two steps; changes need a recent sign-in. */
function passkeysSection(viewer: Viewer, opts: { list: PasskeyListing[]; reauth: ReauthAsk | undefined; setup?: PasskeyChallenge | undefined }): SafeHtml {
  const csrf = csrfField(viewer.csrf);
  return html`<section aria-labelledby="passkeys-heading">
  <h2 id="passkeys-heading">Passkeys</h2>
  <p>A passkey (your device's screen lock, or a security key) is a second sign-in step like a code, and counts as two-step sign-in where the account's owner requires it.</p>
  ${passkeyRows(opts.list, viewer.timeZone, csrf, opts.reauth === undefined)}
  ${
    opts.reauth
      ? html`<form method="post" action="/account/reauth" id="passkeys-reauth">
    ${csrf}
    <p>To add or remove a passkey, confirm it is you first.</p>
    ${reauthFields(viewer.email, opts.reauth)}
    <button type="submit">Confirm</button>
  </form>`
      : opts.setup
        ? html`<form method="post" action="/account/passkeys/add" id="passkey-add">
    ${csrf}
    <label for="passkey-name">Name of this passkey</label>
    <input id="passkey-name" name="name" type="text" maxlength="60" placeholder="Laptop" value="Passkey">
    ${passkeyFields(opts.setup, 'create', 'passkey_', 'Create the passkey')}
  </form>`
        : html`<form method="post" action="/account/passkeys/start">
    ${csrf}
    <button type="submit">Add a passkey</button>
  </form>`
  }
</section>`;
}
