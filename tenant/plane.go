package tenant

import "context"

// ControlPlane is what the kernel's parts and the pillars may ask of the
// central control plane, which implements it. It is the only way they
// reach projects, placements and payment accounts: none of them queries
// the control plane's tables.
type ControlPlane interface {
	// Secret is the server secret, from which parts derive their keys
	// (OAuth state, token encryption, webhook signing secrets).
	Secret() []byte
	// ScopeFor binds a project by id, with no key (jobs, callbacks, the
	// processor's events); httpapi.ErrNotFound when there is none.
	ScopeFor(ctx context.Context, projectID string) (*Scope, error)
	// LinkPaymentAccount records that the payment processor's account
	// belongs to the project (the account's events are routed by it).
	LinkPaymentAccount(ctx context.Context, projectID, accountID string) error
	// ProjectForAccount returns the project a processor account belongs
	// to; httpapi.ErrNotFound when none.
	ProjectForAccount(ctx context.Context, accountID string) (string, error)
}
