import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

/**
 * A minimal browser over `app.inject()`: keeps cookies, sends our Origin on form posts (as a
 * browser does), and reads the CSRF token of the page it last loaded.
 */
export class InjectBrowser {
  readonly cookies = new Map<string, string>();
  lastHtml = '';
  readonly #app: FastifyInstance;
  readonly #origin: string;

  constructor(app: FastifyInstance, origin: string) {
    this.#app = app;
    this.#origin = origin;
  }

  #remember(res: LightMyRequestResponse): LightMyRequestResponse {
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number; expires?: Date }>) {
      const expired = c.maxAge === 0 || (c.expires !== undefined && c.expires.getTime() <= Date.now()) || c.value === '';
      if (expired) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    if (String(res.headers['content-type'] ?? '').startsWith('text/html')) this.lastHtml = res.body;
    return res;
  }

  #cookieHeader(): Record<string, string> {
    return this.cookies.size === 0 ? {} : { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
  }

  /** The `csrf_token` value of the page loaded last. */
  csrf(): string {
    const m = /name="csrf_token" value="([^"]+)"/.exec(this.lastHtml);
    if (!m) throw new Error('no CSRF field on the last page');
    return m[1]!;
  }

  async get(url: string): Promise<LightMyRequestResponse> {
    return this.#remember(await this.#app.inject({ method: 'GET', url, headers: this.#cookieHeader() }));
  }

  async post(url: string, form: Record<string, string>, headers: Record<string, string> = { origin: this.#origin }): Promise<LightMyRequestResponse> {
    return this.#remember(
      await this.#app.inject({
        method: 'POST',
        url,
        headers: { ...this.#cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: new URLSearchParams(form).toString(),
      }),
    );
  }
}
