import { GatewayError } from '@gw/errors';
import type { FastifySchemaCompiler } from 'fastify';
import { z } from 'zod';

type Issue = z.core.$ZodIssue;
type Path = ReadonlyArray<PropertyKey>;

/** `messages[2].content[0].type`: a field as a client writes it. */
function fieldOf(path: Path): string {
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`)).join('');
}

/**
 * A union none of whose branches took the value: when exactly one branch took its type (the others
 * refused it at its root), that branch's own problems say what to fix (`content[0].type must be a
 * string`, not "must be a string or an array"); otherwise the union's message.
 */
function closestBranch(issue: z.core.$ZodIssueInvalidUnion): Issue[] | undefined {
  const typeMatched = issue.errors.filter((branch) => !branch.some((i) => i.path.length === 0 && i.code === 'invalid_type'));
  return typeMatched.length === 1 ? typeMatched[0] : undefined;
}

/** Each problem as `<field> <what is wrong>`, in the order of the schema's fields. */
export function problemsOf(issues: readonly Issue[], prefix: Path = []): string[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    const branch = issue.code === 'invalid_union' ? closestBranch(issue) : undefined;
    if (branch) return problemsOf(branch, path);
    return [path.length === 0 ? issue.message : `${fieldOf(path)} ${issue.message}`];
  });
}

/** The 400 of a body that fails its schema: every problem named at once. */
function invalidRequest(issues: readonly Issue[]): GatewayError {
  return new GatewayError('invalid_request', `Invalid request: ${[...new Set(problemsOf(issues))].join('; ')}.`);
}

/** `data` as `schema` reads it (its output), or the `invalid_request` that names every problem. */
export function parseBody<S extends z.ZodType>(schema: S, data: unknown): z.output<S> {
  const result = schema.safeParse(data);
  if (!result.success) throw invalidRequest(result.error.issues);
  return result.data;
}

/**
 * Fastify's validator for the public routes: a zod schema validates its part, and the value handed
 * on is the schema's output (`parseBody`). A plain JSON Schema only documents (path parameters,
 * headers): each route reads those itself.
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema }) => {
  if (!(schema instanceof z.ZodType)) return () => true;
  return (data) => {
    try {
      return { value: parseBody(schema, data) };
    } catch (error) {
      return { error: error as Error };
    }
  };
};
