import type { Permission, Role } from '../members/roles.ts';
import { formatInteger } from './format.ts';
import { html, type HtmlValue, type SafeHtml } from './html.ts';

/** What every signed-in page knows about who is looking. */
export interface Viewer {
  email: string;
  accountName: string;
  accountId: string;
  /** The zone times are shown in. */
  timeZone: string;
  /** The session's CSRF token, put in every form. */
  csrf: string;
  /** The wallet balance in credits, shown in every page's header; undefined when billing could not say. */
  balance: bigint | undefined;
  /** The account's alerts that crossed and have not re-armed, as sentences (the banner on every page). */
  alertsCrossed: readonly string[];
  /** Security notices about the member's sign-in not seen yet (a password changed, a link issued). */
  unseenNotices: number;
  role: Role;
  /** What the role allows: the pages show only what the member may do. */
  permissions: ReadonlySet<Permission>;
}

export interface Notice {
  kind: 'success' | 'error';
  text: string;
}

const NAV: Array<{ href: string; label: string; needs: Permission }> = [
  { href: '/keys', label: 'API keys', needs: 'keys.view' },
  { href: '/usage', label: 'Usage', needs: 'usage.view' },
  { href: '/activity', label: 'Activity', needs: 'usage.view' },
  { href: '/balance', label: 'Balance', needs: 'balance.view' },
  { href: '/members', label: 'Members', needs: 'members.manage' },
  { href: '/alerts', label: 'Alerts', needs: 'alerts.manage' },
  { href: '/audit', label: 'Audit', needs: 'audit.view' },
  { href: '/account', label: 'Account', needs: 'self' },
];

/**
 * A wide table in a box of its own: on a narrow screen the box scrolls sideways (the page never
 * does), with a shadow at the edge that has more and a line saying so; it is focusable so the
 * keyboard scrolls it too, and named for screen readers.
 */
export function tableScroll(label: string, table: SafeHtml): SafeHtml {
  return html`<div class="table-scroll" role="region" aria-label="${label}" tabindex="0">${table}</div>
<p class="scroll-cue muted" aria-hidden="true">Scroll the table sideways to see every column →</p>`;
}

/** The hidden CSRF field every state-changing form carries. */
export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="csrf_token" value="${token}">`;
}

export function noticeBox(notice: Notice | undefined): SafeHtml {
  if (!notice) return html``;
  // Errors interrupt (alert); confirmations are announced politely (status).
  return notice.kind === 'error'
    ? html`<p class="notice notice-error" role="alert">${notice.text}</p>`
    : html`<p class="notice notice-success" role="status">${notice.text}</p>`;
}

function document(title: string, header: SafeHtml, body: HtmlValue, footer: SafeHtml): SafeHtml {
  return html`<!doctype html>
<html lang="en" data-theme="light">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<title>${title} · Gateway console</title>
<link rel="stylesheet" href="/assets/pico.min.css">
<link rel="stylesheet" href="/assets/console.css">
<script src="/assets/console.js" defer></script>
<script src="/assets/passkeys.js" defer></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to main content</a>
${header}
<main id="main" class="container" tabindex="-1">
${body}
</main>
${footer}
</body>
</html>`;
}

/** A page for a signed-in member: navigation, logout, and the account and time zone in the footer. */
export function page(opts: { title: string; path: string; viewer: Viewer; notice?: Notice | undefined; body: HtmlValue }): SafeHtml {
  const { viewer } = opts;
  const header = html`<header class="container site-header">
  <nav aria-label="Main">
    <ul><li><a href="/" class="brand"><strong>Gateway console</strong></a></li></ul>
    <ul>
      ${NAV.filter((n) => viewer.permissions.has(n.needs)).map(
        (n) => html`<li><a href="${n.href}"${opts.path === n.href ? html` aria-current="page"` : ''}>${n.label}</a></li>`,
      )}
      <li><a href="/balance" class="balance-chip" data-balance>${
        viewer.balance === undefined ? html`Balance unavailable` : html`<span class="muted">Balance</span> <strong>${formatInteger(viewer.balance)}</strong> credits`
      }</a></li>
      <li>
        <form method="post" action="/logout" class="inline-form">
          ${csrfField(viewer.csrf)}
          <button type="submit" class="secondary outline">Log out</button>
        </form>
      </li>
    </ul>
  </nav>
</header>`;
  const footer = html`<footer class="container site-footer">
  <small>Signed in as ${viewer.email} (${viewer.role}) · account ${viewer.accountName} · times in ${viewer.timeZone} · 1 credit = 1 VND</small>
</footer>`;
  const security =
    viewer.unseenNotices > 0 && opts.path !== '/account'
      ? html`<p class="security-banner" role="status"><a href="/account#notices-heading">${viewer.unseenNotices === 1 ? 'A new security notice' : `${viewer.unseenNotices} new security notices`} about your sign-in: read ${viewer.unseenNotices === 1 ? 'it' : 'them'} on the account page.</a></p>`
      : '';
  const alerts =
    viewer.alertsCrossed.length > 0
      ? html`<div class="alert-banner" role="status" data-alert-banner><strong>Alert:</strong> ${viewer.alertsCrossed.map((t) => html`<span>${t}</span> `)}${
          viewer.permissions.has('alerts.manage') ? html`<a href="/alerts">See the alerts</a>` : ''
        }</div>`
      : '';
  return document(opts.title, header, [alerts, security, noticeBox(opts.notice), opts.body], footer);
}

/** A page for someone not signed in (login, set password, errors before login). */
export function publicPage(opts: { title: string; notice?: Notice | undefined; body: HtmlValue }): SafeHtml {
  const header = html`<header class="container site-header"><nav aria-label="Main"><ul><li><strong>Gateway console</strong></li></ul></nav></header>`;
  return document(opts.title, header, html`<div class="narrow">${noticeBox(opts.notice)}${opts.body}</div>`, html``);
}
