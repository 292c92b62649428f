package content

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/tenant"
)

// ReadKey is readKey, for the round-trip test.
var ReadKey = readKey

// Write is write with events, for the test of two writes in one transaction.
func Write(ctx context.Context, tx pgx.Tx, s *tenant.Scope, events tenant.Emitter, items []ValueChange) (*tenant.Later[[]ContentKey], error) {
	return (&Service{events: events}).write(ctx, tx, s, items)
}
