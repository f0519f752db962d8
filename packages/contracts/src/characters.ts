/**
 * Whether `text` has at most `max` characters, counted as the spec counts them (Unicode code
 * points; a lone surrogate is one). Counted in place: a string whose UTF-16 length alone rules it
 * out is refused at once, so a body of megabytes never becomes an array of one string per
 * character (`[...text]` did that, ~190 MiB of memory for a 22 MB prompt).
 */
export function withinCharacters(text: string, max: number): boolean {
  if (text.length <= max) return true;
  if (text.length > 2 * max) return false;
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    if (++count > max) return false;
  }
  return true;
}
