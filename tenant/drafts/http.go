package drafts

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// Item is one type of item's versions routes: GET …/versions,
// GET …/versions/{n} and POST …/versions/{n}/restore under the item's
// path.
type Item struct {
	Type string
	// Ref answers the reference of the item the request names (the
	// type's 404 when there is none), read with q; in a transaction it
	// locks the item.
	Ref func(ctx context.Context, q tenant.Querier, r *http.Request, s *tenant.Scope) (string, error)
	// View answers the draft doc of the item ref as the type's draft read
	// (?draft=true) answers it.
	View func(ctx context.Context, q tenant.Querier, r *http.Request, s *tenant.Scope, ref string, doc json.RawMessage) (any, error)
}

// Mount mounts the versions routes of it under path (such as
// /pages/{id_or_slug}).
func (it Item) Mount(r chi.Router, path string) {
	r.Get(path+"/versions", tenant.Handle(it.list))
	r.Get(path+"/versions/{n}", tenant.Handle(it.get))
	r.Post(path+"/versions/{n}/restore", tenant.Handle(it.restore))
}

func (it Item) list(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	ref, err := it.Ref(r.Context(), s.Reader(), r, s)
	if err != nil {
		return err
	}
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]Version, error) {
		return List(r.Context(), s.Reader(), it.Type, ref, before, limit)
	}, func(v Version) string { return strconv.Itoa(v.N) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

func (it Item) get(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	n, err := httpapi.PathID(r, "n", errNoVersion)
	if err != nil {
		return err
	}
	ref, err := it.Ref(r.Context(), s.Reader(), r, s)
	if err != nil {
		return err
	}
	v, err := Get(r.Context(), s.Reader(), it.Type, ref, n)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, v)
}

// restore makes version n the item's draft and answers the draft view.
func (it Item) restore(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	n, err := httpapi.PathID(r, "n", errNoVersion)
	if err != nil {
		return err
	}
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (any, error) {
		ref, err := it.Ref(r.Context(), tx, r, s)
		if err != nil {
			return nil, err
		}
		doc, err := Restore(r.Context(), tx, s, it.Type, ref, n)
		if err != nil {
			return nil, err
		}
		return it.View(r.Context(), tx, r, s, ref, doc)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}
