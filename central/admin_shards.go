package central

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// The shards of the admin API (/admin/api/shards): what plinth shard
// add, list, drain and retire do, for an operator's tooling. Reading
// needs shards:read (shards:admin implies it); the rest shards:admin. A
// shard's connection URL goes in once and never comes back out: no
// answer, log line or error carries it.

// AdminShardRoutes mounts the shard routes of the admin API.
func (c *Central) AdminShardRoutes(r chi.Router) {
	need := c.RequireAdmin
	r.With(need("shards:read")).Get("/shards", httpapi.H(c.adminShards))
	r.With(need("shards:admin")).Post("/shards", httpapi.H(c.adminAddShard))
	r.With(need("shards:read")).Get("/shards/{name}", httpapi.H(c.adminShard))
	r.With(need("shards:admin")).Post("/shards/{name}/drain", httpapi.H(c.adminDrainShard))
	r.With(need("shards:admin")).Post("/shards/{name}/retire", httpapi.H(c.adminShardState(ShardRetired)))
	r.With(need("shards:admin")).Post("/projects/{id}/move", httpapi.H(c.adminMoveProject))
	r.With(need("shards:read")).Get("/projects/{id}/moves", httpapi.H(c.adminProjectMoves))
	r.With(need("shards:read")).Get("/moves/{id}", httpapi.H(c.adminMove))
	r.With(need("shards:admin")).Post("/moves/{id}/cancel", httpapi.H(c.adminCancelMove))
}

// AdminMoveRequest is the body of POST /admin/api/projects/{id}/move.
type AdminMoveRequest struct {
	Shard string `json:"shard" required:"true"`
}

// adminMoveProject starts moving a project to another shard: 202 with the
// move, which a worker runs (GET /admin/api/moves/{id} follows it).
func (c *Central) adminMoveProject(w http.ResponseWriter, r *http.Request) error {
	var req AdminMoveRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	m, err := c.StartMove(r.Context(), chi.URLParam(r, "id"), req.Shard)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/admin/api/moves/"+m.ID)
	return httpapi.JSON(w, 202, m)
}

func (c *Central) adminProjectMoves(w http.ResponseWriter, r *http.Request) error {
	ms, err := c.ProjectMoves(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, map[string]any{"data": ms})
}

func (c *Central) adminMove(w http.ResponseWriter, r *http.Request) error {
	m, err := c.GetMove(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, m)
}

func (c *Central) adminCancelMove(w http.ResponseWriter, r *http.Request) error {
	m, err := c.CancelMove(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, m)
}

// adminShards lists every shard, each server asked what it answers now.
// The list is short (one row per PostgreSQL server): it is not paged.
func (c *Central) adminShards(w http.ResponseWriter, r *http.Request) error {
	shards, err := c.ListShards(r.Context(), true)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, map[string]any{"data": shards})
}

func (c *Central) adminShard(w http.ResponseWriter, r *http.Request) error {
	s, err := c.GetShard(r.Context(), chi.URLParam(r, "name"))
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, s)
}

// AdminAddShardRequest is the body of POST /admin/api/shards.
type AdminAddShardRequest struct {
	Name string `json:"name" required:"true"`
	URL  string `json:"url" required:"true"`
	// Capacity in projects; absent: DefaultShardCapacity.
	Capacity *int `json:"capacity"`
}

func (c *Central) adminAddShard(w http.ResponseWriter, r *http.Request) error {
	var req AdminAddShardRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	p := ShardParams{Name: req.Name, URL: req.URL}
	if req.Capacity != nil {
		if *req.Capacity < 1 {
			return httpapi.Invalid("capacity", "must be a positive number of projects")
		}
		p.Capacity = *req.Capacity
	}
	s, err := c.AddShard(r.Context(), p)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, s)
}

// adminShardState makes the shard of the path retired.
func (c *Central) adminShardState(state string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		s, err := c.SetShardState(r.Context(), chi.URLParam(r, "name"), state)
		if err != nil {
			return err
		}
		return httpapi.JSON(w, 200, s)
	}
}

// adminDrainShard makes the shard draining and moves its projects away.
func (c *Central) adminDrainShard(w http.ResponseWriter, r *http.Request) error {
	s, err := c.DrainShard(r.Context(), chi.URLParam(r, "name"))
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, s)
}
