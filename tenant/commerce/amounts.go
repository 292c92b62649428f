package commerce

import (
	"math"
	"math/bits"
	"strconv"
)

// Bounds on money and quantities (docs/api/commerce.md, "Limits"). With
// them no order can overflow: MaxLines lines of MaxQuantity units at
// MaxAmount stay far below 2^63. The sums are still computed with checks,
// so a row written before the bounds existed (a price above MaxAmount)
// is refused, not wrapped around.
const (
	// MaxAmount bounds every amount in minor units: prices, an order's
	// total, a refund. It is the processor's maximum charge for most
	// currencies (Stripe: eight digits, 999,999.99 in a two-decimal
	// currency); a checkout above it would only be refused there.
	MaxAmount = 99_999_999
	// MaxQuantity bounds the units of one order line.
	MaxQuantity = 10_000
	// MaxLines bounds the lines of one order.
	MaxLines = 100
)

var (
	amountMsg   = "must be an integer from 0 to " + strconv.Itoa(MaxAmount) + " in the currency's minor unit"
	quantityMsg = "must be an integer from 1 to " + strconv.Itoa(MaxQuantity)
	linesMsg    = "must have 1 to " + strconv.Itoa(MaxLines) + " entries"
	totalMsg    = "the order's total must be at most " + strconv.Itoa(MaxAmount) + " in the currency's minor unit"
)

// validAmount reports whether n is an amount the API accepts.
func validAmount(n int64) bool { return n >= 0 && n <= MaxAmount }

// mulAmount returns price × qty, false when either is negative or the
// product does not fit an int64.
func mulAmount(price, qty int64) (int64, bool) {
	if price < 0 || qty < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(price), uint64(qty))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

// addAmount returns a + b, false when either is negative or the sum does
// not fit an int64.
func addAmount(a, b int64) (int64, bool) {
	if a < 0 || b < 0 || a > math.MaxInt64-b {
		return 0, false
	}
	return a + b, true
}

// sumRefunds adds refund amounts, saturating at math.MaxInt64 and
// skipping negative ones: the result is only ever compared with, and
// capped at, an order's total, so saturation keeps that comparison right
// where wrapping around would not.
func sumRefunds(amounts map[string]int64) int64 {
	var sum int64
	for _, a := range amounts {
		if a < 0 {
			continue
		}
		s, ok := addAmount(sum, a)
		if !ok {
			return math.MaxInt64
		}
		sum = s
	}
	return sum
}
