package central

import (
	"context"
	"sync/atomic"
)

// scopeCountKey carries the counter of CountScopes.
type scopeCountKey struct{}

// CountScopes returns ctx with n counting every project ScopeFor binds
// under it (or a context derived from it): how a test sees that a job's
// project is bound once, by the job gate, as Resolves shows it of a
// request's key (TestJobScopeResolvedOnce).
func CountScopes(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, scopeCountKey{}, n)
}

// countScope counts a ScopeFor made under a CountScopes context.
func countScope(ctx context.Context) {
	if n, _ := ctx.Value(scopeCountKey{}).(*atomic.Int64); n != nil {
		n.Add(1)
	}
}
