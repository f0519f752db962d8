import { describe, expect, it } from 'vitest';
import { BytesBudget } from '../src/bytes-budget.ts';

function reserved(r: ReturnType<BytesBudget['reserve']>): () => void {
  if ('full' in r) throw new Error(`refused: ${r.full} budget full`);
  return r.release;
}

describe('BytesBudget', () => {
  it('refuses an owner past its own budget while others still fit', () => {
    const budget = new BytesBudget({ totalBytes: 100, perOwnerBytes: 50 });
    reserved(budget.reserve('a', 30));
    expect(budget.reserve('a', 30)).toEqual({ full: 'owner' });
    reserved(budget.reserve('b', 30));
    expect(budget.used('a')).toBe(30);
    expect(budget.used()).toBe(60);
  });

  it('refuses anyone once the whole budget is taken', () => {
    const budget = new BytesBudget({ totalBytes: 100, perOwnerBytes: 60 });
    reserved(budget.reserve('a', 60));
    reserved(budget.reserve('b', 30));
    expect(budget.reserve('c', 20)).toEqual({ full: 'total' });
  });

  it('gives bytes back once, however often release is called', () => {
    const budget = new BytesBudget({ totalBytes: 100, perOwnerBytes: 100 });
    const release = reserved(budget.reserve('a', 70));
    const other = reserved(budget.reserve('b', 30));
    release();
    release();
    expect(budget.used()).toBe(30);
    expect(budget.used('a')).toBe(0);
    other();
    expect(budget.used()).toBe(0);
  });

  it('lets a request larger than a budget through when nothing else is reserved, so none is refused forever', () => {
    const budget = new BytesBudget({ totalBytes: 100, perOwnerBytes: 50 });
    const release = reserved(budget.reserve('a', 80));
    expect(budget.reserve('a', 1)).toEqual({ full: 'owner' });
    expect(budget.reserve('b', 30)).toEqual({ full: 'total' });
    release();
    reserved(budget.reserve('b', 30));
  });
});
