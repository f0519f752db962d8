import { createRequire } from 'node:module';
import { hash, verify, type Options } from '@node-rs/argon2';
import type { ZxcvbnFactory } from '@zxcvbn-ts/core';

/**
 * Passwords: argon2id with OWASP's recommended parameters (19 MiB, 2 passes, 1 lane), of the
 * password normalised to Unicode NFKC (the same password typed on another keyboard or system,
 * composed or decomposed, full-width or not, is the same password). A new password must have at
 * least 12 characters (code points, as NIST 800-63B counts them) and at most 256 (UTF-16 units, as forms count), not consist
 * of spaces and invisible characters alone, not be the e-mail address, and not be easy to guess
 * by zxcvbn's estimate (offline, with its bundled lists of common passwords, names and words,
 * and keyboard patterns): score 3 of 4 at least, about 10⁸ guesses.
 */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 256;
/** zxcvbn's score a new password needs (0 to 4). */
const MIN_SCORE = 3;
/** zxcvbn reads this much of a password (its cost grows with the length). */
const ESTIMATE_MAX = 100;
// `Algorithm.Argon2id` is a const enum (unusable under isolated modules); its value is 2.
const ARGON2ID = 2 as Options['algorithm'];
const PARAMS: Options = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 };

/** The form a password is hashed and checked in. */
export function normalizePassword(password: string): string {
  return password.normalize('NFKC');
}

/** Spaces, controls, format characters (zero-width and direction marks) and the blank letters some scripts have. */
const INVISIBLE = /[\p{White_Space}\p{Cc}\p{Cf}\p{Mn}\p{Me}\u115F\u1160\u2800\u3164\uFFA0]/gu;

let estimator: ZxcvbnFactory | undefined;

const require = createRequire(import.meta.url);

/**
 * zxcvbn, loaded and built on first use (its dictionaries take half a second to rank, and
 * several MiB of memory the console need not hold until someone chooses a password).
 */
function strength(): ZxcvbnFactory {
  if (estimator) return estimator;
  const { ZxcvbnFactory: Factory } = require('@zxcvbn-ts/core') as typeof import('@zxcvbn-ts/core');
  const zxcvbnCommon = require('@zxcvbn-ts/language-common') as typeof import('@zxcvbn-ts/language-common');
  const zxcvbnEn = require('@zxcvbn-ts/language-en') as typeof import('@zxcvbn-ts/language-en');
  estimator = new Factory({
    dictionary: { ...zxcvbnCommon.dictionary, ...zxcvbnEn.dictionary },
    graphs: zxcvbnCommon.adjacencyGraphs,
    translations: zxcvbnEn.translations,
    maxLength: ESTIMATE_MAX,
  });
  return estimator;
}

/** Why a new password is refused (a sentence saying what to do), or null when it is acceptable. */
export function passwordProblem(password: string, email: string): string | null {
  const normal = normalizePassword(password);
  const length = [...normal].length;
  if (length < PASSWORD_MIN) return `Use at least ${PASSWORD_MIN} characters.`;
  if (password.length > PASSWORD_MAX) return `Use at most ${PASSWORD_MAX} characters.`;
  if (normal.replace(INVISIBLE, '') === '') return 'The password cannot be only spaces or invisible characters. Use words or other characters you can see.';
  const address = email.trim().toLowerCase();
  if (normal.trim().toLowerCase() === address) return 'The password cannot be your e-mail address.';
  const result = strength().check(normal, [address, address.split('@')[0] ?? '', 'gateway', 'console']);
  if (result.score < MIN_SCORE) {
    const why = result.feedback.warning ? `${result.feedback.warning.replace(/\.$/, '')}. ` : '';
    return `This password is too easy to guess. ${why}Use a longer passphrase of several unrelated words.`;
  }
  return null;
}

export function hashPassword(password: string): Promise<string> {
  return hash(normalizePassword(password), PARAMS);
}

let dummy: Promise<string> | undefined;

/**
 * Checks a password against a stored hash. With no hash (unknown e-mail, or no password set yet)
 * it verifies against a dummy hash anyway and answers false, so the answer takes as long either
 * way and timing does not tell which e-mail addresses have an account. A hash made before
 * passwords were normalised matches the password as it was typed.
 */
export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  if (password.length > PASSWORD_MAX) return false;
  const normal = normalizePassword(password);
  if (!stored) {
    dummy ??= hashPassword('not a password of anyone');
    await verify(await dummy, normal).catch(() => false);
    return false;
  }
  if (await verify(stored, normal).catch(() => false)) return true;
  return normal !== password && verify(stored, password).catch(() => false);
}
