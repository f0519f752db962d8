import type { alertsV1 } from '@gw/contracts';
import { formatInteger, formatTime, isoTime } from './format.ts';
import { html, type SafeHtml } from './html.ts';
import { reauthFields, type ReauthAsk } from './passkeys.view.ts';
import { csrfField, page, tableScroll, type Notice, type Viewer } from './layout.ts';

export const WEBHOOK_URL_MAX = 2048;

/** What the create form sends back when it is shown again (a refusal keeps what was typed). */
export interface AlertForm {
  lowBalance: string;
  monthlyBudget: string;
  thresholds: string;
  webhookUrl: string;
}

function when(ms: bigint, viewer: Viewer): SafeHtml {
  return ms > 0n ? html`<time datetime="${isoTime(ms)}">${formatTime(ms, viewer.timeZone)}</time>` : html`<span class="muted">—</span>`;
}

function alertRow(a: alertsV1.Alert, viewer: Viewer): SafeHtml {
  const low =
    a.lowBalance > 0n
      ? html`below ${formatInteger(a.lowBalance)} credits · ${a.lowBalanceArmed ? html`armed` : html`<strong>reached</strong> (re-armed by a top-up above it)`}`
      : html`<span class="muted">none</span>`;
  const budget =
    a.monthlyBudget > 0n
      ? html`${formatInteger(a.monthlyBudget)} credits a month at ${a.budgetThresholds.join(', ')} % · spent ${formatInteger(a.budgetSpent)}${a.budgetMonth ? html` in ${a.budgetMonth.slice(0, 7)}` : ''} · reached: ${
          a.budgetFired.length > 0 ? html`<strong>${a.budgetFired.join(', ')} %</strong>` : 'none yet'
        }`
      : html`<span class="muted">none</span>`;
  return html`<tr data-alert="${a.alertId}">
  <td>${low}</td>
  <td>${budget}</td>
  <td><code>${a.webhookUrl}</code></td>
  <td>${when(a.createdAtUnixMs, viewer)}</td>
  <td>
    <form method="post" action="/alerts/${a.alertId}/test" class="inline-form">${csrfField(viewer.csrf)}<button type="submit" class="secondary outline">Send a test</button></form>
    <form method="post" action="/alerts/${a.alertId}/clear" class="inline-form">${csrfField(viewer.csrf)}
      <label><input type="checkbox" name="confirm" value="yes" required> confirm</label>
      <button type="submit" class="secondary">Clear</button></form>
  </td>
</tr>`;
}

function deliveryRow(d: alertsV1.Delivery, viewer: Viewer): SafeHtml {
  return html`<tr data-delivery="${d.deliveryId}" data-status="${d.status}">
  <td>${when(d.createdAtUnixMs, viewer)}</td>
  <td><code>${d.type}</code></td>
  <td>${d.status}${d.status === 'pending' && d.nextAttemptAtUnixMs > 0n ? html`<br><small class="muted">next attempt ${when(d.nextAttemptAtUnixMs, viewer)}</small>` : ''}</td>
  <td class="num">${d.attempts}</td>
  <td>${d.lastError ? html`<small>${d.lastError}</small>` : html`<span class="muted">—</span>`}</td>
</tr>`;
}

function secretBox(created: { alertId: string; secret: string }): SafeHtml {
  return html`<article class="created-key" aria-labelledby="new-secret-heading">
  <h2 id="new-secret-heading">The alert's signing secret</h2>
  <p>Give it to the receiver to verify the deliveries (Standard Webhooks). <strong>It is shown only now</strong>: to get a new one, clear the alert and set it again.</p>
  <input id="new-secret-value" type="text" readonly value="${created.secret}" aria-label="Signing secret (shown once)" spellcheck="false" autocomplete="off">
</article>`;
}

export function alertsPage(opts: {
  viewer: Viewer;
  alerts: readonly alertsV1.Alert[];
  deliveries: readonly alertsV1.Delivery[];
  reauth: ReauthAsk | undefined;
  created?: { alertId: string; secret: string } | undefined;
  form?: AlertForm | undefined;
  notice?: Notice | undefined;
}): SafeHtml {
  const { viewer } = opts;
  const f = opts.form;
  const body = html`<h1>Alerts</h1>
${opts.created ? secretBox(opts.created) : ''}
<section aria-labelledby="alerts-heading">
  <h2 id="alerts-heading">This account's alerts</h2>
  ${
    opts.alerts.length === 0
      ? html`<p>No alerts yet.</p>`
      : tableScroll('Alerts', html`<table class="striped">
    <thead><tr><th scope="col">Low balance</th><th scope="col">Monthly budget</th><th scope="col">Webhook</th><th scope="col">Created</th><th scope="col">Actions</th></tr></thead>
    <tbody>${opts.alerts.map((a) => alertRow(a, viewer))}</tbody></table>`)
  }
</section>
<section aria-labelledby="new-alert-heading">
  <h2 id="new-alert-heading">New alert</h2>
  <p class="muted">Each crossing is delivered once to the webhook, signed (Standard Webhooks), and shown in a banner here. To change an alert, clear it and set a new one.</p>
  <form method="post" action="/alerts">
    ${csrfField(viewer.csrf)}
    <div class="grid">
      <div><label for="low-balance">Low balance (credits, optional)</label>
        <input id="low-balance" name="low_balance" type="text" inputmode="numeric" maxlength="16" value="${f?.lowBalance ?? ''}"></div>
      <div><label for="monthly-budget">Monthly budget (credits, optional)</label>
        <input id="monthly-budget" name="monthly_budget" type="text" inputmode="numeric" maxlength="16" value="${f?.monthlyBudget ?? ''}"></div>
      <div><label for="thresholds">Budget thresholds (%)</label>
        <input id="thresholds" name="budget_thresholds" type="text" maxlength="64" placeholder="50,80,100" value="${f?.thresholds ?? ''}"></div>
    </div>
    <label for="webhook-url">Webhook URL (https)</label>
    <input id="webhook-url" name="webhook_url" type="url" required maxlength="${WEBHOOK_URL_MAX}" value="${f?.webhookUrl ?? ''}">
    ${
      opts.reauth ? reauthFields(viewer.email, opts.reauth) : ''
    }
    <button type="submit">Create alert</button>
  </form>
</section>
<section aria-labelledby="deliveries-heading">
  <h2 id="deliveries-heading">Delivery log</h2>
  ${
    opts.deliveries.length === 0
      ? html`<p>No deliveries yet.</p>`
      : tableScroll('Webhook deliveries', html`<table class="striped">
    <caption class="visually-hidden">Webhook deliveries, newest first</caption>
    <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Last error</th></tr></thead>
    <tbody>${opts.deliveries.map((d) => deliveryRow(d, viewer))}</tbody></table>`)
  }
</section>`;
  return page({ title: 'Alerts', path: '/alerts', viewer, notice: opts.notice, body });
}
