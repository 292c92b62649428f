package central_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/httpapi"
)

// TestCacheFillAfterInvalidation: a key looked up just before its
// revocation, and cached just after the revocation cleared the cache, must
// not stay usable for the cache TTL; nor a project read before an update.
// The invalidation comes between the lookup and the fill, every time, by
// the hook.
func TestCacheFillAfterInvalidation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	ctx := context.Background()
	// A Central of its own, without the LISTEN loop, so the only
	// invalidations are the ones the hook makes, on this instance.
	c, err := central.Open(ctx, env.DB.Pool, env.Config.Secret, time.Hour, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.MintKey(ctx, p.ID, "doomed", []string{"*"}, nil, false)
	if err != nil {
		t.Fatal(err)
	}

	c.SetBeforeCacheFill(func() {
		if err := c.RevokeKey(ctx, p.ID, k.ID); err != nil {
			t.Error(err)
		}
	})
	// This lookup read the key while it was active: its own answer stands.
	if _, err := c.Resolve(ctx, k.Secret); err != nil {
		t.Fatalf("the lookup before the revocation: %v", err)
	}
	c.SetBeforeCacheFill(nil)
	_, err = c.Resolve(ctx, k.Secret)
	var he *httpapi.Error
	if !errors.As(err, &he) || he.Status != 401 {
		t.Fatalf("the revoked key after the racing fill: %v, want 401", err)
	}

	c.SetBeforeCacheFill(func() {
		name := "Renamed"
		if _, err := c.UpdateProject(ctx, p.ID, central.ProjectUpdate{Name: &name}); err != nil {
			t.Error(err)
		}
	})
	if _, err := c.ScopeFor(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	c.SetBeforeCacheFill(nil)
	s, err := c.ScopeFor(ctx, p.ID)
	if err != nil || s.Project.Name != "Renamed" {
		t.Fatalf("the project after the racing fill: %+v %v, want Renamed", s, err)
	}
}
