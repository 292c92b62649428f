package drafts

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/tenant"
)

// Publisher publishes one type of item, for releases (tenant/releases):
// what POST …/publish does, inside a transaction the caller owns.
type Publisher struct {
	// Scope is the scope a key needs to publish the type's items (the
	// pillar's write scope, such as content:write).
	Scope string
	// Resolve answers the reference of the item the API names id (a
	// page's id or slug, a component's or gallery's slug, a content key,
	// "" for the brand, a post's id or slug): a not-found failure when the
	// project has none. In a transaction it locks the item.
	Resolve func(ctx context.Context, q tenant.Querier, id string) (ref string, err error)
	// Publish makes the draft of the item ref live in langs (nil: whole)
	// in tx, as its POST …/publish does, its content.published naming
	// release (nil: none). A failure (the item is gone, its draft no
	// longer valid) fails the whole transaction.
	Publish func(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string, langs []string, release *int64) error
}

// Publishers are the publishers of each type of item, by type.
type Publishers map[string]Publisher
