import type { KeyView } from '../billing/key-view.ts';
import { barChart, rowChart } from './bar-chart.ts';
import { formatInteger } from './format.ts';
import { html, type SafeHtml } from './html.ts';
import { page, tableScroll, type Notice, type Viewer } from './layout.ts';

export type UsageGroup = 'day' | 'model' | 'key';

export interface UsageQuery {
  from: string;
  to: string;
  /** Empty for the whole account. */
  keyId: string;
  group: UsageGroup;
}

/** Sums of one row (or of the whole period). */
export interface UsageSums {
  requests: bigint;
  inputTokens: bigint;
  outputTokens: bigint;
  totalTokens: bigint;
  images: bigint;
  videoSeconds: bigint;
  credits: bigint;
}

export interface UsageLine {
  /** Day `YYYY-MM-DD`, model id or key id. */
  group: string;
  /** What the row is called on the page (a key's name, a model with its kind). */
  label: string;
  sums: UsageSums;
}

export const USAGE_COLUMNS: Array<{ field: keyof UsageSums; title: string }> = [
  { field: 'requests', title: 'Requests' },
  { field: 'inputTokens', title: 'Input tokens' },
  { field: 'outputTokens', title: 'Output tokens' },
  { field: 'totalTokens', title: 'Total tokens' },
  { field: 'images', title: 'Images' },
  { field: 'videoSeconds', title: 'Video seconds' },
  { field: 'credits', title: 'Credits' },
];

const GROUP_TITLE: Record<UsageGroup, string> = { day: 'Day', model: 'Model', key: 'Key' };

/** The query string of a usage view (for the CSV link and the group switcher). */
export function usageSearch(q: UsageQuery, group: UsageGroup = q.group): string {
  const params = new URLSearchParams({ from: q.from, to: q.to, group });
  if (q.keyId) params.set('key', q.keyId);
  return params.toString();
}

export function usagePage(opts: {
  viewer: Viewer;
  query: UsageQuery;
  keys: KeyView[];
  lines: UsageLine[];
  totals: UsageSums;
  notice?: Notice | undefined;
}): SafeHtml {
  const { viewer, query: q, lines, totals } = opts;
  const keyName = q.keyId ? (opts.keys.find((k) => k.id === q.keyId)?.name || 'selected key') : '';
  const scope = q.keyId ? `key “${keyName}”` : 'the whole account';
  const chartOpts = {
    id: 'usage-chart',
    title: `Credits by ${GROUP_TITLE[q.group].toLowerCase()}, ${q.from} to ${q.to}`,
    description: `Credits charged for ${scope}, ${lines.length} ${q.group === 'day' ? 'days' : 'groups'}; the table below has the same numbers.`,
    unit: 'credits',
    bars: lines.map((l) => ({ label: l.label, ...(q.group === 'day' ? { tick: l.group.slice(5) } : {}), value: l.sums.credits })),
  };
  // Days run along a time axis; models and keys are names, read best one per row.
  const chart = q.group === 'day' ? barChart(chartOpts) : rowChart(chartOpts);
  // The chart keeps every day (its gaps are the quiet days); the table lists only days with use.
  const shown = q.group === 'day' ? lines.filter((l) => l.sums.requests > 0n) : lines;
  const idle = lines.length - shown.length;
  const body = html`<h1>Usage</h1>
<form method="get" action="/usage" class="usage-filters" aria-label="Usage period and scope">
  <div class="grid">
    <div><label for="from">From</label><input id="from" name="from" type="date" required value="${q.from}"></div>
    <div><label for="to">To</label><input id="to" name="to" type="date" required value="${q.to}"></div>
    <div><label for="key">Key</label>
      <select id="key" name="key">
        <option value=""${q.keyId === '' ? html` selected` : ''}>All keys (whole account)</option>
        ${opts.keys.map((k) => html`<option value="${k.id}"${k.id === q.keyId ? html` selected` : ''}>${k.name || k.display} (${k.display})</option>`)}
      </select></div>
    <div><label for="group">Group by</label>
      <select id="group" name="group">
        ${(['day', 'model', 'key'] as const).map((g) => html`<option value="${g}"${g === q.group ? html` selected` : ''}>${GROUP_TITLE[g]}</option>`)}
      </select></div>
  </div>
  <button type="submit">Show</button>
  <a href="/usage.csv?${usageSearch(q)}" role="button" class="secondary outline" download>Download CSV</a>
</form>
<p class="muted">Days are calendar days in ${viewer.timeZone}. Credits are net of refunds.</p>

<section aria-labelledby="summary-heading">
  <h2 id="summary-heading">Totals for ${scope}</h2>
  <div class="stat-cards">
    <article><header>Requests</header><p class="stat" data-stat="requests">${formatInteger(totals.requests)}</p></article>
    <article><header>Tokens</header><p class="stat" data-stat="tokens">${formatInteger(totals.totalTokens)}</p></article>
    <article><header>Images</header><p class="stat" data-stat="images">${formatInteger(totals.images)}</p></article>
    <article><header>Video seconds</header><p class="stat" data-stat="video-seconds">${formatInteger(totals.videoSeconds)}</p></article>
    <article><header>Credits</header><p class="stat" data-stat="credits">${formatInteger(totals.credits)}</p></article>
  </div>
</section>

<section aria-labelledby="chart-heading">
  <h2 id="chart-heading">Chart</h2>
  ${totals.requests === 0n ? html`<p>No usage in this period.</p>` : chart}
</section>

<section aria-labelledby="table-heading">
  <h2 id="table-heading">By ${GROUP_TITLE[q.group].toLowerCase()}</h2>
  ${q.group === 'day' && idle > 0 ? html`<p class="muted" data-idle-days="${idle}">${idle === lines.length ? 'No day of this period had usage.' : `${idle} ${idle === 1 ? 'day' : 'days'} without usage ${idle === 1 ? 'is' : 'are'} not listed.`}</p>` : ''}
  ${tableScroll(
    `Usage by ${GROUP_TITLE[q.group].toLowerCase()}`,
    html`<table class="striped usage-table">
    <caption class="visually-hidden">Usage by ${GROUP_TITLE[q.group].toLowerCase()} for ${scope}, ${q.from} to ${q.to}</caption>
    <thead><tr><th scope="col">${GROUP_TITLE[q.group]}</th>${USAGE_COLUMNS.map((c) => html`<th scope="col" class="num">${c.title}</th>`)}</tr></thead>
    <tbody>${
      shown.length === 0
        ? html`<tr><td colspan="${USAGE_COLUMNS.length + 1}">No usage in this period.</td></tr>`
        : shown.map(
            (l) => html`<tr><th scope="row">${l.label}</th>${USAGE_COLUMNS.map((c) => html`<td class="num">${formatInteger(l.sums[c.field])}</td>`)}</tr>`,
          )
    }</tbody>
    <tfoot><tr><th scope="row">Total</th>${USAGE_COLUMNS.map((c) => html`<td class="num">${formatInteger(totals[c.field])}</td>`)}</tr></tfoot>
  </table>`,
  )}
</section>`;
  return page({ title: 'Usage', path: '/usage', viewer, notice: opts.notice, body });
}

/** A CSV cell: quoted when needed, and text a spreadsheet would run as a formula defused. */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function usageCsv(q: UsageQuery, lines: UsageLine[], timeZone: string): string {
  const head = q.group === 'day' ? ['date'] : q.group === 'model' ? ['model'] : ['key_id', 'key_name'];
  const fields = ['requests', 'input_tokens', 'output_tokens', 'total_tokens', 'images', 'video_seconds', 'credits'];
  const rows = [[...head, ...fields, 'time_zone']];
  for (const l of lines) {
    const first = q.group === 'key' ? [l.group, l.label] : [l.group];
    rows.push([...first, ...USAGE_COLUMNS.map((c) => l.sums[c.field].toString()), timeZone]);
  }
  return `${rows.map((r) => r.map(csvCell).join(',')).join('\r\n')}\r\n`;
}
