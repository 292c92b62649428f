package credits

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// AICeiling is the most AI work (hundredths) a pool may be charged within
// any one minute: 300 credits (docs/decisions.md section 5).
const AICeiling int64 = 300 * Unit

// MinAIRetryAfter is the shortest Retry-After the AI ceiling answers
// with: longer than a request-limit wait, since AI work is slow and dear.
const MinAIRetryAfter = 10

// aiOps are the operations that pay for AI generation.
var aiOps = []string{
	"blog_post", "social_post", "image", "translate_language", "content_plan", "website",
	"video", "video_premium", "chat_message",
}

var aiSet = func() map[string]bool {
	m := map[string]bool{}
	for _, op := range aiOps {
		m[op] = true
	}
	return m
}()

// IsAI reports whether op pays for AI generation and so counts against
// the AI cost ceiling.
func IsAI(op string) bool { return aiSet[op] }

// ErrAICeiling is wrapped by the 429 Charge returns when the AI cost
// ceiling would be exceeded.
var ErrAICeiling = errors.New("AI cost ceiling reached")

// aiCeiling refuses cost when the pool's AI charges of the last minute
// (net of refunds) plus cost exceed AICeiling. It runs under the pool
// row's lock, so concurrent charges on every instance see each other. A
// single operation dearer than the ceiling passes when the window is
// empty, or it could never run.
func aiCeiling(ctx context.Context, tx pgx.Tx, pool string, cost int64) error {
	rows, err := tx.Query(ctx, `SELECT amount, extract(epoch FROM created_at + interval '1 minute' - clock_timestamp())::float8
		FROM credit_ledger WHERE pool = $1 AND op = ANY($2) AND created_at > clock_timestamp() - interval '1 minute'
		ORDER BY created_at`, pool, aiOps)
	if err != nil {
		return err
	}
	type charge struct {
		amount int64
		expire float64 // seconds until it leaves the window
	}
	recent, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (charge, error) {
		var c charge
		return c, r.Scan(&c.amount, &c.expire)
	})
	if err != nil {
		return err
	}
	var used int64
	for _, c := range recent {
		used += c.amount
	}
	if used <= 0 || used+cost <= AICeiling {
		return nil
	}
	// Wait until enough of the window has aged out for cost to fit.
	wait := 60.0
	left := used
	for _, c := range recent {
		left -= c.amount
		if left <= 0 || left+cost <= AICeiling {
			wait = c.expire
			break
		}
	}
	secs := max(int(math.Ceil(wait)), MinAIRetryAfter)
	e := httpapi.RateLimited(secs, fmt.Sprintf("the AI cost ceiling of %d credits per minute is reached (%s used in the last minute)",
		AICeiling/Unit, whole(used, true)))
	return fmt.Errorf("%w: %w", e, ErrAICeiling)
}
