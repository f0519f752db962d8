import { z } from 'zod';

/**
 * Field schemas the public request shapes share, each with the words a 400 uses for it: a problem
 * reads `<field path> <message>` (see problems.ts), e.g. `messages[2].role must be one of user,
 * assistant`. Every message says what a valid value is.
 */

/** `null`, `array` or the `typeof`: what a client sent instead. */
function typeName(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'array' : typeof value;
}

const missing = (input: unknown) => input === undefined || input === null;

/** One message for every failure of a field, or `is required` when it is absent. */
const orRequired = (message: string) => ({ error: (issue: { input?: unknown }) => (missing(issue.input) ? 'is required' : message) });

export const requiredString = () => z.string(orRequired('must be a non-empty string')).min(1, 'must be a non-empty string');

export const typed = {
  string: () => z.string({ error: (issue) => `must be a string, not ${typeName(issue.input)}` }),
  boolean: () => z.boolean({ error: (issue) => `must be a boolean, not ${typeName(issue.input)}` }),
  object: () => z.looseObject({}, { error: (issue) => `must be an object, not ${typeName(issue.input)}` }),
};

/** The largest output cap accepted: int32, as providers take it; no model writes more. */
const MAX_TOKENS_CAP = 2_147_483_647;

/**
 * An output cap. Not `z.int()`, which refuses integers past 2^53 as not integers: a cap past
 * int32 is told its bound instead.
 */
export const positiveInt = () =>
  z
    .number(orRequired('must be a positive integer'))
    .refine((n) => Number.isInteger(n) && n > 0, 'must be a positive integer')
    .refine((n) => n <= MAX_TOKENS_CAP, `must be at most ${MAX_TOKENS_CAP}`)
    .meta({ type: 'integer', minimum: 1, maximum: MAX_TOKENS_CAP });

export const numberIn = (min: number, max: number) => {
  const message = `must be a number from ${min} to ${max}`;
  return z.number({ error: message }).min(min, message).max(max, message);
};

/** A list present, an array, not empty. */
export const requiredList = <T extends z.ZodType>(item: T) => z.array(item, orRequired('must be an array')).min(1, 'must not be empty');

export const string = () => z.string({ error: 'must be a string' });

export const stringList = () => z.array(string(), { error: 'must be an array of strings' });

/** A string or a list of strings (`stop`). */
export const stringOrList = () => z.union([z.string(), z.array(string())], { error: 'must be a string or an array of strings' });

export const role = <const R extends readonly [string, ...string[]]>(roles: R) => z.enum(roles, { error: `must be one of ${roles.join(', ')}` });

/** Content as a string or an array of typed parts/blocks. */
export const content = () =>
  z.union([z.string(), z.array(z.looseObject({ type: string() }, { error: 'must be an object with a string type' }))], {
    error: 'must be a string or an array of content parts',
  });

/** A list of tools, each an object checked by `tool`. */
export const toolList = <T extends z.ZodType>(tool: T) => z.array(tool, { error: 'must be an array' });

export const object = <S extends z.ZodRawShape>(shape: S) => z.looseObject(shape, { error: 'must be an object' });
