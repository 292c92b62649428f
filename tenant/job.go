package tenant

import (
	"context"
	"errors"
)

// JobProject is how a job names its project: the fields every project
// job's args carry under these JSON names. The control plane's job gate
// (central's JobGate, River middleware) reads them before any worker runs,
// binds the project once, and hands the scope to the worker on the job's
// context (JobScope). A job whose args have no project_id is a platform
// job (the drop of a deleted project): it runs with no scope.
type JobProject struct {
	ProjectID string `json:"project_id"`
	// KeyID and Test name the test key that asked for the job: a test
	// job's scope is bound with that key, so that what the job spends or
	// announces draws on the test pool (Scope.Test). A job asked for with
	// a live key, or with none (a schedule), runs with no key.
	KeyID string `json:"key_id,omitempty"`
	Test  bool   `json:"test,omitempty"`
}

// Bind returns the scope a job of live runs in: live itself, or, for a
// test job, the same project and pool with the job's test key.
func (j JobProject) Bind(live *Scope) (*Scope, error) {
	if !j.Test {
		return live, nil
	}
	return live.WithKey(&Key{ID: j.KeyID, Test: true})
}

type jobScopeKey struct{}

// WithJobScope returns ctx carrying the scope the job gate bound for the
// job being worked.
func WithJobScope(ctx context.Context, s *Scope) context.Context {
	return context.WithValue(ctx, jobScopeKey{}, s)
}

// ErrNoJobScope is JobScope's error when no scope was bound: the worker
// ran without the job gate (a misconfigured River client), or its job's
// args have no project_id.
var ErrNoJobScope = errors.New("tenant: no project scope bound to the job: its worker ran without the job gate (central's JobGate middleware), or its args have no project_id")

// JobScope returns the scope the job gate bound for the job of ctx. A
// worker of a project job reads its project here and never resolves it
// again; without one it fails with ErrNoJobScope rather than guess.
func JobScope(ctx context.Context) (*Scope, error) {
	if s, _ := ctx.Value(jobScopeKey{}).(*Scope); s != nil {
		return s, nil
	}
	return nil, ErrNoJobScope
}
