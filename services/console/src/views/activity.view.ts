import type { KeyView } from '../billing/key-view.ts';
import { formatInteger, formatTime, isoTime } from './format.ts';
import { html, type SafeHtml } from './html.ts';
import { page, tableScroll, type Notice, type Viewer } from './layout.ts';
import { csvCell } from './usage.view.ts';

/** What the activity log is filtered by; empty strings for "all". */
export interface ActivityFilter {
  keyId: string;
  model: string;
  status: string;
  from: string;
  to: string;
}

/** One request as the log shows it. */
export interface ActivityLine {
  requestId: string;
  clientRequestId: string;
  createdAt: bigint;
  keyId: string;
  keyLabel: string;
  endpoint: string;
  model: string;
  inputTokens: bigint;
  outputTokens: bigint;
  units: bigint;
  credits: bigint;
  status: string;
  latencyMs: bigint;
}

export const ACTIVITY_STATUSES: Record<string, string> = {
  succeeded: 'Succeeded',
  failed: 'Failed (not charged)',
  refunded: 'Refunded',
  in_progress: 'In progress',
};

/** The query string of a filter (and a page of it). */
export function activitySearch(f: ActivityFilter, cursor = ''): string {
  const params = new URLSearchParams();
  if (f.keyId) params.set('key', f.keyId);
  if (f.model) params.set('model', f.model);
  if (f.status) params.set('status', f.status);
  if (f.from) params.set('from', f.from);
  if (f.to) params.set('to', f.to);
  if (cursor) params.set('cursor', cursor);
  return params.toString();
}

/** Tokens of a text request; images or video seconds of a media one. */
function usageText(l: ActivityLine): SafeHtml {
  if (l.status === 'in_progress' || l.status === 'failed') return html`<span class="muted">—</span>`;
  if (l.endpoint.startsWith('images/')) return html`${formatInteger(l.units)} ${l.units === 1n ? 'image' : 'images'}`;
  if (l.endpoint.startsWith('videos/')) return html`${formatInteger(l.units)} s of video`;
  return html`<span title="input + output tokens">${formatInteger(l.inputTokens)} in · ${formatInteger(l.outputTokens)} out</span>`;
}

function latencyText(ms: bigint, status: string): string {
  if (status === 'in_progress') return '—';
  return ms < 1000n ? `${ms} ms` : `${(Number(ms) / 1000).toFixed(1)} s`;
}

export function activityPage(opts: {
  viewer: Viewer;
  filter: ActivityFilter;
  keys: KeyView[];
  models: string[];
  lines: ActivityLine[];
  olderCursor: string;
  isFirstPage: boolean;
  notice?: Notice | undefined;
}): SafeHtml {
  const { viewer, filter: f, lines } = opts;
  const filtered = f.keyId !== '' || f.model !== '' || f.status !== '' || f.from !== '' || f.to !== '';
  const body = html`<h1>Activity</h1>
<p class="muted">Every billed request, newest first: its request id is the <code>x-request-id</code> header the API answered with. Requests refused before anything was held (authentication, rate limits, balance) cost nothing and are not listed.</p>
<form method="get" action="/activity" class="activity-filters" aria-label="Filter requests">
  <div class="grid">
    <div><label for="activity-key">Key</label>
      <select id="activity-key" name="key">
        <option value="">All keys</option>
        ${opts.keys.map((k) => html`<option value="${k.id}"${k.id === f.keyId ? html` selected` : ''}>${k.name || k.display} (${k.display})</option>`)}
      </select></div>
    <div><label for="activity-model">Model</label>
      <select id="activity-model" name="model">
        <option value="">All models</option>
        ${opts.models.map((m) => html`<option value="${m}"${m === f.model ? html` selected` : ''}>${m}</option>`)}
      </select></div>
    <div><label for="activity-status">Status</label>
      <select id="activity-status" name="status">
        <option value="">Any status</option>
        ${Object.entries(ACTIVITY_STATUSES).map(([v, label]) => html`<option value="${v}"${v === f.status ? html` selected` : ''}>${label}</option>`)}
      </select></div>
    <div><label for="activity-from">From</label><input id="activity-from" name="from" type="date" value="${f.from}"></div>
    <div><label for="activity-to">To</label><input id="activity-to" name="to" type="date" value="${f.to}"></div>
  </div>
  <button type="submit">Filter</button>
  ${filtered ? html`<a href="/activity" role="button" class="secondary outline">Clear filters</a>` : ''}
  <a href="/activity.csv?${activitySearch(f)}" role="button" class="secondary outline" download>Download CSV</a>
</form>
${
  lines.length === 0
    ? html`<p>${filtered ? 'No request matches these filters.' : 'No requests yet.'}</p>`
    : tableScroll(
        'Requests',
        html`<table class="striped activity-table">
    <caption class="visually-hidden">Requests, newest first; times in ${viewer.timeZone}</caption>
    <thead><tr><th scope="col">Time</th><th scope="col">Key</th><th scope="col">Model and endpoint</th><th scope="col">Tokens</th><th scope="col" class="num">Credits</th><th scope="col" class="num">Latency</th><th scope="col">Status</th><th scope="col">Request id</th></tr></thead>
    <tbody>${lines.map(
      (l) => html`<tr data-request-id="${l.requestId}" data-status="${l.status}">
      <td><time datetime="${isoTime(l.createdAt)}">${formatTime(l.createdAt, viewer.timeZone)}</time></td>
      <td>${l.keyId ? html`<a href="/keys/${l.keyId}">${l.keyLabel}</a>` : html`<span class="muted">none</span>`}</td>
      <td>${l.model}<br><small class="muted"><code>${l.endpoint}</code></small></td>
      <td>${usageText(l)}</td>
      <td class="num">${formatInteger(l.credits)}</td>
      <td class="num">${latencyText(l.latencyMs, l.status)}</td>
      <td><span class="status status-req-${l.status}">${ACTIVITY_STATUSES[l.status] ?? l.status}</span></td>
      <td class="request-id"><code>${l.requestId}</code>${l.clientRequestId ? html`<br><small class="muted">yours: <code>${l.clientRequestId}</code></small>` : ''}</td>
    </tr>`,
    )}</tbody></table>`,
      )
}
<nav aria-label="Activity pages" class="pager">
  ${opts.isFirstPage ? '' : html`<a href="/activity?${activitySearch(f)}">Newest requests</a>`}
  ${opts.olderCursor ? html`<a href="/activity?${activitySearch(f, opts.olderCursor)}" rel="next">Older requests →</a>` : ''}
</nav>`;
  return page({ title: 'Activity', path: '/activity', viewer, notice: opts.notice, body });
}

/** The activity log as CSV: one line per request, times in UTC (ISO 8601), ids as the API gave them. */
export function activityCsv(lines: ActivityLine[]): string {
  const rows = [['time', 'request_id', 'client_request_id', 'key_id', 'key_name', 'endpoint', 'model', 'input_tokens', 'output_tokens', 'units', 'credits', 'latency_ms', 'status']];
  for (const l of lines) {
    rows.push([
      isoTime(l.createdAt), l.requestId, l.clientRequestId, l.keyId, l.keyLabel, l.endpoint, l.model,
      l.inputTokens.toString(), l.outputTokens.toString(), l.units.toString(), l.credits.toString(), l.latencyMs.toString(), l.status,
    ]);
  }
  return `${rows.map((r) => r.map(csvCell).join(',')).join('\r\n')}\r\n`;
}
