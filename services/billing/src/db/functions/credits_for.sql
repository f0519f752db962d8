-- Credits for a quantity of units, integers only (DECISIONS.md "Money"):
-- text (million_tokens) = max(1, ceil(tokens x price / 1,000,000)); images and seconds = quantity x price.
-- A successful text request costs at least 1 credit, even with zero tokens or a zero price.
-- numeric, so a product past int64 is compared, not overflowed (callers bound it before storing);
-- the ceiling is an integer division (div), exact at any size.
-- The same rule as creditsFor in src/domain/pricing.ts (authorize prices the hold there); a test
-- holds the two equal.
create or replace function "credits_for"(p_unit text, p_quantity numeric, p_price numeric) returns numeric
language sql immutable as $fn$
  select case when p_unit = 'million_tokens' then greatest(1, div(p_quantity * p_price + 999999, 1000000))
              else p_quantity * p_price end
$fn$
