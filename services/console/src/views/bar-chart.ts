import { formatInteger } from './format.ts';
import { html, type SafeHtml } from './html.ts';

/**
 * A bar chart as server-rendered SVG: no script, nothing to load, readable by screen readers (a
 * title and a description, and the same numbers in the table beside it), and styled by the page's
 * CSS. It scales with its container through its viewBox.
 */

export interface Bar {
  label: string;
  /** Shorter label under the axis (e.g. `03-14` for a day); `label` when absent. */
  tick?: string;
  value: bigint;
}

const WIDTH = 720;
const HEIGHT = 260;
const PAD = { top: 16, right: 12, bottom: 36, left: 84 };

/** Round tick step (1, 2 or 5 times a power of ten) giving about four gridlines up to `max`. */
export function tickStep(max: bigint): bigint {
  if (max <= 4n) return 1n;
  const rough = (max + 3n) / 4n;
  let power = 1n;
  while (power * 10n <= rough) power *= 10n;
  for (const m of [1n, 2n, 5n, 10n]) if (power * m >= rough) return power * m;
  return power * 10n;
}

export function barChart(opts: { id: string; title: string; description: string; unit: string; bars: Bar[] }): SafeHtml {
  const { bars } = opts;
  const max = bars.reduce((m, b) => (b.value > m ? b.value : m), 0n);
  const step = tickStep(max);
  const top = max === 0n ? step * 4n : ((max + step - 1n) / step) * step;
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const slot = bars.length > 0 ? plotW / bars.length : plotW;
  // Thin bars for many days, never a slab for one or two models.
  const barW = Math.min(56, Math.max(1, slot * 0.7));
  // Bigint ratio to float only for pixel positions; the values themselves stay exact.
  const y = (v: bigint) => PAD.top + plotH - Number((v * 10_000n) / (top === 0n ? 1n : top)) / 10_000 * plotH;
  const labelEvery = Math.max(1, Math.ceil(bars.length / 12));

  const ticks: bigint[] = [];
  for (let t = 0n; t <= top; t += step) ticks.push(t);

  return html`<figure class="chart">
  <svg id="${opts.id}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${opts.id}-title ${opts.id}-desc" preserveAspectRatio="xMidYMid meet">
    <title id="${opts.id}-title">${opts.title}</title>
    <desc id="${opts.id}-desc">${opts.description}</desc>
    ${ticks.map(
      (t) => html`<g class="tick"><line x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}"></line>
      <text x="${PAD.left - 8}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end">${formatInteger(t)}</text></g>`,
    )}
    ${bars.map((b, i) => {
      const x = PAD.left + i * slot + (slot - barW) / 2;
      const h = Math.max(b.value > 0n ? 1 : 0, PAD.top + plotH - y(b.value));
      return html`<g class="bar"><rect x="${x.toFixed(1)}" y="${(PAD.top + plotH - h).toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}"><title>${b.label}: ${formatInteger(b.value)} ${opts.unit}</title></rect>
      ${i % labelEvery === 0 ? html`<text class="x-label" x="${(x + barW / 2).toFixed(1)}" y="${HEIGHT - PAD.bottom + 16}" text-anchor="middle">${b.tick ?? b.label}</text>` : ''}</g>`;
    })}
  </svg>
  <figcaption>${opts.title} (${opts.unit})</figcaption>
</figure>`;
}

const ROW_H = 26;
const ROW_PAD = { top: 8, right: 96, bottom: 8, left: 232 };
/** About what fits in the label column at the chart's font size. */
const LABEL_CHARS = 34;

/** A label cut to fit its column, with an ellipsis; the whole label stays in the bar's tooltip. */
export function fitLabel(label: string, max = LABEL_CHARS): string {
  const chars = Array.from(label);
  return chars.length <= max ? label : `${chars.slice(0, max - 1).join('')}…`;
}

/**
 * Bars of named groups (models, keys), one row each with its name on the left and its value at
 * the bar's end: names never run into each other however many rows there are, and the chart
 * grows in height, not in crowding.
 */
export function rowChart(opts: { id: string; title: string; description: string; unit: string; bars: Bar[] }): SafeHtml {
  const { bars } = opts;
  const max = bars.reduce((m, b) => (b.value > m ? b.value : m), 0n);
  const plotW = WIDTH - ROW_PAD.left - ROW_PAD.right;
  const height = ROW_PAD.top + bars.length * ROW_H + ROW_PAD.bottom;
  const w = (v: bigint) => (max === 0n ? 0 : (Number((v * 10_000n) / max) / 10_000) * plotW);
  return html`<figure class="chart chart-rows">
  <svg id="${opts.id}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-labelledby="${opts.id}-title ${opts.id}-desc" preserveAspectRatio="xMinYMin meet">
    <title id="${opts.id}-title">${opts.title}</title>
    <desc id="${opts.id}-desc">${opts.description}</desc>
    ${bars.map((b, i) => {
      const top = ROW_PAD.top + i * ROW_H;
      const width = Math.max(b.value > 0n ? 1 : 0, w(b.value));
      return html`<g class="bar"><text class="y-label" x="${ROW_PAD.left - 8}" y="${top + ROW_H / 2 + 4}" text-anchor="end">${fitLabel(b.label)}</text>
      <rect x="${ROW_PAD.left}" y="${top + 4}" width="${width.toFixed(1)}" height="${ROW_H - 8}"><title>${b.label}: ${formatInteger(b.value)} ${opts.unit}</title></rect>
      <text class="value" x="${(ROW_PAD.left + width + 6).toFixed(1)}" y="${top + ROW_H / 2 + 4}">${formatInteger(b.value)}</text></g>`;
    })}
  </svg>
  <figcaption>${opts.title} (${opts.unit})</figcaption>
</figure>`;
}
