/** A client's value quoted in a message: at most 64 characters of it, then `…` (a 100 KB model name is not echoed). */
export function quoteClientValue(value: unknown, max = 64): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  const chars = Array.from(text.slice(0, max * 2 + 2)); // by code point: a cut never splits a surrogate pair
  return JSON.stringify(chars.length > max ? `${chars.slice(0, max).join('')}…` : text);
}

/**
 * Client values listed in a response header (e.g. the tools a request named that were not sent):
 * each cut to `max` characters, anything but visible ASCII percent-encoded (a header carries no
 * other byte: Node throws on it), the list cut to `maxTotal` characters.
 */
export function headerList(values: readonly string[], max = 64, maxTotal = 1_024): string {
  const items = values.map((v) => {
    const cut = Array.from(v.slice(0, max * 2 + 2));
    const shown = cut.length > max ? `${cut.slice(0, max).join('')}…` : v;
    return shown.replace(/[^\x21-\x7e]|%|,/gu, (c) => encodeURIComponent(c));
  });
  const list = items.join(', ');
  return list.length <= maxTotal ? list : `${list.slice(0, maxTotal)}…`.replace(/…$/u, '%E2%80%A6');
}
