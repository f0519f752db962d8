/** What a price applies to (spec 2.1 `billing_unit`). */
export type BillingUnit = 'million_tokens' | 'image' | 'second';

const MILLION = 1_000_000n;

/**
 * Credits for a quantity of units, integers only (DECISIONS.md "Money"):
 * text = max(1, ceil(tokens × price / 1,000,000)); images and seconds = quantity × price.
 * A successful text request costs at least 1 credit, even with zero tokens or a zero price.
 */
export function creditsFor(unit: BillingUnit, quantity: bigint, pricePerUnit: bigint): bigint {
  if (quantity < 0n || pricePerUnit < 0n) throw new RangeError('quantity and price must be non-negative');
  if (unit !== 'million_tokens') return quantity * pricePerUnit;
  const product = quantity * pricePerUnit;
  const ceil = (product + MILLION - 1n) / MILLION;
  return ceil < 1n ? 1n : ceil;
}
