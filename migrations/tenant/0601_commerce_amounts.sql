-- +goose Up
-- Amounts are never negative, and an order never shows more refunded than
-- its total. The API bounds prices, quantities and totals (MaxAmount in
-- tenant/commerce) and sums them with overflow checks; these checks are
-- the last word should a total ever wrap around again.
--
-- NOT VALID: rows written before the bounds existed (an order whose total
-- wrapped to a negative number) must not stop the migration of their
-- schema. The checks still hold for every row inserted or updated from
-- now on; such an old order can be read but no longer changed.
ALTER TABLE orders ADD CONSTRAINT orders_amounts CHECK (
    subtotal >= 0 AND total >= 0 AND charge_refunded >= 0
    AND refunded_amount >= 0 AND refunded_amount <= total
) NOT VALID;

ALTER TABLE products ADD CONSTRAINT products_compare_at_price CHECK (compare_at_price >= 0) NOT VALID;
