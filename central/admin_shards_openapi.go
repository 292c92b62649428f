package central

import (
	"github.com/plinth-dev/plinth/internal/openapi"
)

// AdminShardsOpenAPI describes the shard routes of the admin API
// (AdminShardRoutes), under the admin tag.
func AdminShardsOpenAPI(d *openapi.Doc) {
	shard := openapi.JSON(d.Schema("Shard", openapi.Obj(openapi.M{
		"name": openapi.M{"type": "string", "pattern": shardNameRe.String()},
		"state": openapi.M{"type": "string", "enum": []any{ShardActive, ShardDraining, ShardRetired},
			"description": "active: takes new projects; draining: takes none (its projects are to move away); retired: holds none."},
		"capacity":   openapi.M{"type": "integer", "minimum": 1, "description": "Projects the shard is meant to hold: a new project goes to the active shard with the most room."},
		"projects":   openapi.M{"type": "integer", "minimum": 0, "description": "Projects placed on the shard, whatever their status."},
		"created_at": openapi.Timestamp(),
		"reachable":  openapi.M{"type": "boolean", "description": "The server answered now (within 3 s); a retired shard is not asked."},
		"version":    openapi.M{"type": "string", "description": "The server's PostgreSQL version, when it answered."},
		"wal_level":  openapi.M{"type": "string", "description": "The server's wal_level, when it answered (a shard needs logical)."},
		"error":      openapi.M{"type": "string", "description": "Why the server did not answer."},
		"drain": openapi.M{"description": "The progress of the shard's last drain; null when it was never drained.", "anyOf": []any{d.Schema("Drain", openapi.Obj(openapi.M{
			"id":          openapi.M{"type": "string"},
			"started_at":  openapi.Timestamp(),
			"moves":       openapi.M{"type": "integer", "minimum": 0, "description": "Moves the drain started: one per project the shard held (those being deleted or moving already aside)."},
			"queued":      openapi.M{"type": "integer", "minimum": 0},
			"moving":      openapi.M{"type": "integer", "minimum": 0, "description": "Copying, catching up or switching."},
			"done":        openapi.M{"type": "integer", "minimum": 0},
			"failed":      openapi.M{"type": "integer", "minimum": 0},
			"cancelled":   openapi.M{"type": "integer", "minimum": 0},
			"finished":    openapi.M{"type": "boolean", "description": "Every move of the drain ended."},
			"finished_at": openapi.Nullable(openapi.Timestamp()),
			"failures": openapi.Arr(openapi.Obj(openapi.M{"move_id": openapi.Str(), "project_id": openapi.Str(), "error": openapi.Str()},
				"move_id", "project_id", "error")),
		}, "id", "started_at", "moves", "queued", "moving", "done", "failed", "cancelled", "finished", "finished_at", "failures")), openapi.M{"type": "null"}}},
	}, "name", "state", "capacity", "projects", "created_at", "reachable", "drain")))
	name := openapi.M{"name": openapi.M{"type": "string"}}
	op := func(o openapi.Op) openapi.Op {
		o.Tag, o.Auth = "admin", openapi.Admin
		return o
	}

	d.Add("GET", "/admin/api/shards", op(openapi.Op{ID: "adminListShards", Summary: "Every shard", Scope: "shards:read (or shards:admin)",
		Desc: "The PostgreSQL servers that hold project schemas, oldest first (\"default\", the central database, first), each with its " +
			"projects and what its server answers now (asked side by side, 3 s at most). Not paged: a deployment has a few. " +
			"No answer carries a shard's connection URL.",
		OK: []openapi.Resp{{Status: 200, Desc: "The shards.", Content: openapi.JSON(openapi.Obj(openapi.M{"data": openapi.Arr(openapi.Ref("Shard"))}, "data"))}}}))
	d.Add("POST", "/admin/api/shards", op(openapi.Op{ID: "adminAddShard", Summary: "Add a shard", Scope: "shards:admin",
		Desc: "Checks the server at `url` (it answers; PostgreSQL 15 or newer; wal_level=logical; a role that may create schemas, and " +
			"publications and subscriptions: a superuser, or REPLICATION and, on 16 or newer, pg_create_subscription), each a 422 on `url` " +
			"naming what is wrong; migrates River's tables there; records the shard with its URL sealed at rest. Every instance starts " +
			"its work there at once, and new projects may land on it. The URL is never shown again nor logged. A name taken is 409; " +
			"\"default\" is the central database's.",
		Body: openapi.JSON(d.Schema("AdminAddShardRequest", openapi.Obj(openapi.M{
			"name": openapi.M{"type": "string", "pattern": shardNameRe.String()},
			"url":  openapi.M{"type": "string", "pattern": "^postgres(ql)?://", "description": "postgres://user:password@host:port/database"},
			"capacity": openapi.M{"type": "integer", "minimum": 1,
				"description": "Projects the shard is meant to hold (default 10000)."},
		}, "name", "url"))),
		Errs: []int{409, 422},
		OK:   []openapi.Resp{{Status: 201, Desc: "The shard, with what its server answered.", Content: shard}}}))
	d.Add("GET", "/admin/api/shards/{name}", op(openapi.Op{ID: "adminGetShard", Summary: "A shard", Scope: "shards:read (or shards:admin)",
		Params: name, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The shard, with what its server answers now.", Content: shard}}}))
	d.Add("POST", "/admin/api/shards/{name}/drain", op(openapi.Op{ID: "adminDrainShard", Summary: "Drain a shard", Scope: "shards:admin",
		Desc: "The shard takes no new project from now on, on every instance, and each project it holds gets a move (as " +
			"POST /admin/api/projects/{id}/move) to the active shard with the most room, counting the moves before it. The moves run " +
			"a bounded number at a time (PLINTH_MOVE_CONCURRENCY per worker process); the shard's `drain` shows their progress and " +
			"failures. Draining it again starts moves for the projects still on it that are not moving (after a failure, say). A shard " +
			"that holds projects and does not answer, or that has no other active shard answering with wal_level=logical to send them " +
			"to, is 409 and nothing changes; so is a retired shard.",
		Params: name, Errs: []int{404, 409},
		OK: []openapi.Resp{{Status: 200, Desc: "The shard, draining, with its drain.", Content: shard}}}))
	move := openapi.JSON(d.Schema("Move", openapi.Obj(openapi.M{
		"id":         openapi.M{"type": "string"},
		"project_id": openapi.M{"type": "string"},
		"from_shard": openapi.M{"type": "string"},
		"to_shard":   openapi.M{"type": "string"},
		"phase": openapi.M{"type": "string", "enum": []any{MoveQueued, MoveCopying, MoveCatchingUp, MoveSwitching, MoveDone, MoveFailed, MoveCancelled},
			"description": "queued; copying (the rows copied as the move's replication slot saw them when it began); catching_up (streaming what changed since); " +
				"switching (the write fence and the flip); then done, failed (error says why; the project serves on from_shard) or cancelled."},
		"method": openapi.Nullable(openapi.M{"type": "string", "enum": []any{MethodReplication, MethodFencedCopy, nil},
			"description": "How the rows go over, chosen as the move starts: replication (a subscription copies them while the project " +
				"serves) or fenced_copy (a project of at most PLINTH_MOVE_COPY_ROWS rows is copied under its fence, a shorter pause)."}),
		"drain_id":    openapi.Nullable(openapi.M{"type": "string", "description": "The drain of its shard that started the move, if one did."}),
		"rows_copied": openapi.M{"type": "integer", "minimum": 0, "description": "Rows of the project's tables on the target, counted after the copy and at the end."},
		"lag_bytes":   openapi.Nullable(openapi.M{"type": "integer", "description": "WAL the target had still to confirm when last measured."}),
		"pause_ms":    openapi.Nullable(openapi.M{"type": "integer", "description": "How long the project's writes waited at the fence (done moves)."}),
		"error":       openapi.Nullable(openapi.Str()),
		"created_at":  openapi.Timestamp(),
		"updated_at":  openapi.Timestamp(),
		"finished_at": openapi.Nullable(openapi.Timestamp()),
	}, "id", "project_id", "from_shard", "to_shard", "phase", "method", "drain_id", "rows_copied", "lag_bytes", "pause_ms", "error", "created_at", "updated_at", "finished_at")))
	pid := openapi.M{"id": openapi.M{"type": "string"}}
	d.Add("POST", "/admin/api/projects/{id}/move", op(openapi.Op{ID: "adminMoveProject", Summary: "Move a project to another shard", Scope: "shards:admin",
		Desc: "Starts moving the project online (docs/operations.md \"Moving a project\"): its schema is copied to `shard` by PostgreSQL " +
			"logical replication while it serves; then its writes wait (they are not refused) while the last changes arrive, its " +
			"waiting jobs and deliveries follow it, and its placement flips, at most PLINTH_MOVE_MAX_PAUSE (5 s). An unknown shard, " +
			"one that does not answer or runs wal_level other than logical is 422 on `shard`; a shard not active, the project's own " +
			"shard, a project being deleted or already moving is 409.",
		Params: pid, Body: openapi.JSON(d.Schema("AdminMoveRequest", openapi.Obj(openapi.M{
			"shard": openapi.M{"type": "string", "description": "The shard to move the project to."}}, "shard"))),
		Errs: []int{404, 409, 422},
		OK:   []openapi.Resp{{Status: 202, Desc: "The move, queued; Location names it.", Content: move}}}))
	d.Add("GET", "/admin/api/projects/{id}/moves", op(openapi.Op{ID: "adminListProjectMoves", Summary: "A project's moves", Scope: "shards:read (or shards:admin)",
		Desc: "The project's last 100 moves, newest first.", Params: pid, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The moves.", Content: openapi.JSON(openapi.Obj(openapi.M{"data": openapi.Arr(openapi.Ref("Move"))}, "data"))}}}))
	d.Add("GET", "/admin/api/moves/{id}", op(openapi.Op{ID: "adminGetMove", Summary: "A move", Scope: "shards:read (or shards:admin)",
		Desc: "Where a move is: its phase, rows copied, replication lag, the write pause, and its error when it failed.", Params: pid, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The move.", Content: move}}}))
	d.Add("POST", "/admin/api/moves/{id}/cancel", op(openapi.Op{ID: "adminCancelMove", Summary: "Cancel a move", Scope: "shards:admin",
		Desc: "Asks a move that is queued, copying or catching up to stop: it ends cancelled within a second or so, the project serving on " +
			"its shard and nothing left on the target. A move switching or ended is 409.", Params: pid, Errs: []int{404, 409},
		OK: []openapi.Resp{{Status: 200, Desc: "The move, asked to cancel (its phase changes once the worker has cleaned up).", Content: move}}}))
	d.Add("POST", "/admin/api/shards/{name}/retire", op(openapi.Op{ID: "adminRetireShard", Summary: "Retire a shard", Scope: "shards:admin",
		Desc: "Only a shard that holds no project (409 naming how many it holds otherwise); never \"default\", the central database (409). " +
			"A retired shard takes no project, is not asked by /readyz, and its work stops on every instance. Retiring is for good.",
		Params: name, Errs: []int{404, 409},
		OK: []openapi.Resp{{Status: 200, Desc: "The shard, retired.", Content: shard}}}))
}
