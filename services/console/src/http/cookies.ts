import type { CookieSerializeOptions } from '@fastify/cookie';

/**
 * Cookie names and attributes. Over https (the default) the cookies are `Secure` and use the
 * `__Host-` prefix, which browsers only accept from a secure origin, for the whole host, on path
 * `/`: no subdomain or plain-http page can set or overwrite them. Local plain-http runs set
 * CONSOLE_INSECURE_COOKIES=true and get the same cookies without `Secure` and without the prefix.
 */
export interface CookieSettings {
  /** The session id. */
  session: string;
  /** A random value that anonymous forms (sign-in, set password) bind their CSRF token to. */
  preSession: string;
  /** Marks a browser that signed in to an address before (sign-in throttling, `auth/device.ts`). */
  device: string;
  options: CookieSerializeOptions;
}

export function cookieSettings(secure: boolean): CookieSettings {
  const prefix = secure ? '__Host-' : '';
  return {
    session: `${prefix}gw_session`,
    preSession: `${prefix}gw_pre`,
    device: `${prefix}gw_device`,
    // HttpOnly: no script can read them. SameSite=Lax: not sent on cross-site POSTs or
    // subresource requests, still sent when a person follows a link to the console.
    options: { httpOnly: true, secure, sameSite: 'lax', path: '/' },
  };
}
