package idempotency

// Figures of the expiry job the tests check against.
const (
	// PerRun is the most expired entries one run deletes.
	PerRun = expireBatch * expireRounds
	// ExpirySlack is added to the expiry the job waits for.
	ExpirySlack = expirySlack
)
