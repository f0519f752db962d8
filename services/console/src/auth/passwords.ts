import { hash, verify, type Options } from '@node-rs/argon2';

/**
 * Passwords: argon2id with OWASP's recommended parameters (19 MiB, 2 passes, 1 lane). Length is
 * bounded both ways: at least 12 characters (NIST 800-63B lets length, not composition rules, do
 * the work) and at most 256, so nobody can make the server hash megabytes.
 */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 256;
// `Algorithm.Argon2id` is a const enum (unusable under isolated modules); its value is 2.
const ARGON2ID = 2 as Options['algorithm'];
const PARAMS: Options = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 };

/** Why a new password is refused, or null when it is acceptable. */
export function passwordProblem(password: string, email: string): string | null {
  if (password.length < PASSWORD_MIN) return `Use at least ${PASSWORD_MIN} characters.`;
  if (password.length > PASSWORD_MAX) return `Use at most ${PASSWORD_MAX} characters.`;
  if (password.trim().toLowerCase() === email.trim().toLowerCase()) return 'The password cannot be your e-mail address.';
  return null;
}

export function hashPassword(password: string): Promise<string> {
  return hash(password, PARAMS);
}

let dummy: Promise<string> | undefined;

/**
 * Checks a password against a stored hash. With no hash (unknown e-mail, or no password set yet)
 * it verifies against a dummy hash anyway and answers false, so the answer takes as long either
 * way and timing does not tell which e-mail addresses have an account.
 */
export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  if (password.length > PASSWORD_MAX) return false;
  if (!stored) {
    dummy ??= hashPassword('not a password of anyone');
    await verify(await dummy, password).catch(() => false);
    return false;
  }
  return verify(stored, password).catch(() => false);
}
