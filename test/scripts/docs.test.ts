import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OPENAPI_FILE, openApiDocument } from '../../scripts/openapi.ts';
import { ROOT } from '../../scripts/system.ts';

/** The user-facing documents: the README, docs/, deploy/ and each package's or service's README. */
function documents(): string[] {
  const found = ['README.md', 'deploy/README.md', 'deploy/helm/generation-gateway/README.md'];
  for (const f of readdirSync(join(ROOT, 'docs'))) if (f.endsWith('.md')) found.push(`docs/${f}`);
  for (const dir of ['services', 'packages']) {
    for (const name of readdirSync(join(ROOT, dir))) if (existsSync(join(ROOT, dir, name, 'README.md'))) found.push(`${dir}/${name}/README.md`);
  }
  return found.filter((f) => existsSync(join(ROOT, f)));
}

/** Markdown link targets that are paths (not URLs, not in-page anchors). */
function localLinks(text: string): string[] {
  const targets = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
  return targets.filter((t) => !/^[a-z]+:/i.test(t) && !t.startsWith('#')).map((t) => t.split('#')[0]!);
}

describe('documentation', () => {
  it('every link resolves to a file inside the repository', () => {
    const broken: string[] = [];
    for (const doc of documents()) {
      for (const link of localLinks(readFileSync(join(ROOT, doc), 'utf8'))) {
        const target = resolve(dirname(join(ROOT, doc)), link);
        const inside = !relative(ROOT, target).startsWith('..');
        if (!inside || !existsSync(target)) broken.push(`${doc}: ${link}${inside ? '' : ' (outside the repository)'}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the README starts with the two commands: one starts everything, one runs the tests', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const first = readme.match(/```bash\n([\s\S]*?)```/)![1]!.trim().split('\n');
    expect(first).toHaveLength(2);
    expect(first[0]).toMatch(/&& pnpm start\b/);
    expect(first[1]).toMatch(/&& pnpm test\b/);
    // The test command is the one CI runs.
    expect(readFileSync(join(ROOT, '.ci/run'), 'utf8')).toMatch(/\npnpm test\n/);
  });

  it('records name dates, commits and machines, not work sessions', () => {
    for (const doc of documents()) expect({ doc, session: /\bsession'?s?\b.*machine|\b(second|third|fourth|fifth|sixth|seventh|eighth|ninth) session/i.test(readFileSync(join(ROOT, doc), 'utf8')) }).toEqual({ doc, session: false });
  });

  it('docs/openapi.json is the document /v1/openapi.json serves (regenerate: pnpm openapi)', async () => {
    expect(readFileSync(OPENAPI_FILE, 'utf8')).toBe(await openApiDocument());
  });
});
