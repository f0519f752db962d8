import { formatInteger, formatSigned, formatTime, isoTime } from './format.ts';
import { html, type SafeHtml } from './html.ts';
import { page, tableScroll, type Viewer } from './layout.ts';

export interface LedgerLine {
  kind: string;
  amount: bigint;
  balanceAfter: bigint;
  createdAt: bigint;
  model: string;
  keyLabel: string;
  reference: string;
}

const KIND_LABEL: Record<string, string> = {
  top_up: 'Top-up',
  charge: 'Charge',
  hold: 'Held (request in progress)',
  refund: 'Refund',
  adjustment: 'Adjustment',
};

function details(line: LedgerLine): SafeHtml {
  switch (line.kind) {
    case 'top_up':
      return html`Reference <code>${line.reference}</code>`;
    case 'charge':
    case 'hold':
    case 'refund':
      return html`${line.model || 'request'}${line.keyLabel ? html` · key ${line.keyLabel}` : ''}<br><small class="muted">request <code>${line.reference}</code></small>`;
    default:
      return html`${line.keyLabel ? html`key ${line.keyLabel}` : ''}`;
  }
}

export function balancePage(opts: { viewer: Viewer; balance: bigint; lines: LedgerLine[]; olderCursor: string; isFirstPage: boolean }): SafeHtml {
  const { viewer } = opts;
  const body = html`<h1>Balance</h1>
<article class="balance-card" aria-labelledby="balance-heading">
  <header id="balance-heading">Current balance</header>
  <p class="stat" data-stat="balance"><span id="balance-value">${formatInteger(opts.balance)}</span> credits</p>
  <small class="muted">1 credit = 1 VND. Credits held for requests in progress are already deducted.</small>
</article>
<section aria-labelledby="ledger-heading">
  <h2 id="ledger-heading">History</h2>
  ${
    opts.lines.length === 0
      ? html`<p>No movements yet.</p>`
      : tableScroll('Credit movements', html`<table class="striped ledger-table">
    <caption class="visually-hidden">Credit movements, newest first, with the balance after each</caption>
    <thead><tr><th scope="col">Time</th><th scope="col">Type</th><th scope="col">Details</th><th scope="col" class="num">Amount</th><th scope="col" class="num">Balance after</th></tr></thead>
    <tbody>${opts.lines.map(
      (l) => html`<tr data-kind="${l.kind}">
      <td><time datetime="${isoTime(l.createdAt)}">${formatTime(l.createdAt, viewer.timeZone)}</time></td>
      <td>${KIND_LABEL[l.kind] ?? l.kind}</td>
      <td>${details(l)}</td>
      <td class="num ${l.amount < 0n ? 'negative' : 'positive'}">${formatSigned(l.amount)}</td>
      <td class="num">${formatInteger(l.balanceAfter)}</td>
    </tr>`,
    )}</tbody></table>`)
  }
  <nav aria-label="History pages" class="pager">
    ${opts.isFirstPage ? '' : html`<a href="/balance">Newest entries</a>`}
    ${opts.olderCursor ? html`<a href="/balance?cursor=${opts.olderCursor}" rel="next">Older entries →</a>` : ''}
  </nav>
</section>`;
  return page({ title: 'Balance', path: '/balance', viewer, body });
}
