/** Seconds since the epoch, as the providers' `created` fields use. */
export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
