/**
 * Where links to the console point. Set-password links carry a secret, so they are built on the
 * configured origin only, never on the request's Host header (which whoever sends the request
 * writes: a forged Host would hand the member a link to another site, and the secret with it).
 */

/** The origin of the address the console listens on (when no public URL is configured). */
export function listenOrigin(host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`;
}

export function setPasswordUrl(origin: string, token: string): string {
  return `${origin}/set-password?token=${encodeURIComponent(token)}`;
}
