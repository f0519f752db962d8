import { formatTime, isoTime } from './format.ts';
import { html, type SafeHtml } from './html.ts';
import { page, tableScroll, type Viewer } from './layout.ts';

/** One line of the audit page. */
export interface AuditLine {
  at: bigint;
  /** `member:<id>` (shown as the member's e-mail when known), `operator:<name>` or `unknown`. */
  actor: string;
  origin: string;
  action: string;
  details: string;
}

export function auditPage(opts: { viewer: Viewer; lines: readonly AuditLine[]; page: number; hasOlder: boolean }): SafeHtml {
  const { viewer } = opts;
  const body = html`<h1>Audit trail</h1>
<p class="muted">Every administrative change to this account, newest first: who made it, when, from where and what changed. The trail only grows.</p>
${
  opts.lines.length === 0
    ? html`<p>No changes recorded yet.</p>`
    : tableScroll('Audit events', html`<table class="striped audit-table">
  <caption class="visually-hidden">Administrative changes, newest first</caption>
  <thead><tr><th scope="col">Time</th><th scope="col">Who</th><th scope="col">From</th><th scope="col">Change</th><th scope="col">Details</th></tr></thead>
  <tbody>${opts.lines.map(
    (l) => html`<tr data-action="${l.action}">
    <td><time datetime="${isoTime(l.at)}">${formatTime(l.at, viewer.timeZone)}</time></td>
    <td>${l.actor}</td>
    <td>${l.origin || html`<span class="muted">—</span>`}</td>
    <td><code>${l.action}</code></td>
    <td><small><code>${l.details}</code></small></td>
  </tr>`,
  )}</tbody></table>`)
}
<nav aria-label="Audit pages" class="pager">
  ${opts.page > 1 ? html`<a href="/audit?page=${opts.page - 1}">← Newer changes</a>` : ''}
  ${opts.hasOlder ? html`<a href="/audit?page=${opts.page + 1}" rel="next">Older changes →</a>` : ''}
</nav>`;
  return page({ title: 'Audit trail', path: '/audit', viewer, body });
}
