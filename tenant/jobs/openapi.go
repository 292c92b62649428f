package jobs

import (
	"fmt"

	"github.com/plinth-dev/plinth/internal/openapi"
)

// OpenAPI describes the routes of the pillar and the Job resource, which
// the pillars that start jobs answer with (202).
func OpenAPI(d *openapi.Doc) {
	d.Tag("jobs", "Long-running work such as AI generation and translation: a job's status, progress and result, its steps as Server-Sent Events, "+
		"and its cancellation.")
	status := d.Schema("JobStatus", openapi.M{"type": "string", "enum": []any{StatusPending, StatusProcessing, StatusCompleted, StatusFailed, StatusCancelled}})
	job := openapi.JSON(d.Schema("Job", openapi.Obj(openapi.M{
		"id": openapi.Prefixed("job_"), "type": openapi.Str(), "status": status,
		"progress": openapi.M{"type": "integer", "minimum": 0, "maximum": 100}, "message": openapi.Str(),
		"steps": openapi.Arr(d.Schema("JobStep", openapi.Obj(openapi.M{"name": openapi.Str(), "completed": openapi.M{"type": "boolean"}, "active": openapi.M{"type": "boolean"}},
			"name", "completed", "active"))),
		"result":     openapi.M{"description": "The job type's result, once completed."},
		"error":      d.Schema("JobError", openapi.Obj(openapi.M{"code": openapi.Str(), "message": openapi.Str()}, "code", "message")),
		"created_at": openapi.Timestamp(), "updated_at": openapi.Timestamp(),
	}, "id", "type", "status", "progress", "message", "steps", "created_at", "updated_at")))
	d.Add("GET", "/v1/jobs", openapi.Op{ID: "listJobs", Summary: "Jobs, newest first", Tag: "jobs", Scope: "jobs:read",
		Query: append(openapi.PageParams(),
			openapi.M{"name": "status", "in": "query", "schema": status},
			openapi.M{"name": "type", "in": "query", "schema": openapi.Str()}),
		Errs: []int{422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The jobs.", Content: openapi.JSON(d.List("Job"))}}})
	d.Add("GET", "/v1/jobs/{id}", openapi.Op{ID: "getJob", Summary: "A job", Tag: "jobs", Scope: "jobs:read", Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The job.", Content: job}}})
	d.Add("POST", "/v1/jobs/{id}/cancel", openapi.Op{ID: "cancelJob", Summary: "Cancel a pending or processing job", Tag: "jobs",
		Scope: "jobs:read plus the write scope of the job's pillar", Idempotent: true, Errs: []int{404},
		Desc: "A pending job is cancelled at once (and refunded); a processing one is asked to stop. 409 conflict when it has already finished.",
		OK:   []openapi.Resp{{Status: 200, Desc: "The job.", Content: job}}})
	d.Add("GET", "/v1/jobs/{id}/stream", openapi.Op{ID: "streamJob", Summary: "Server-Sent Events of a job", Tag: "jobs", Scope: "jobs:read",
		Desc: "Events `progress` {progress, message}, `step` {name, completed, active}, `done` (the Job) and `error` {code, message}; " +
			"each has an id (resume with Last-Event-ID). A finished job sends `done` at once. Comments keep the stream alive. " +
			fmt.Sprintf("A project holds at most %d streams open per instance: one more is 429 rate_limited with Retry-After.", MaxStreamsPerProject),
		Headers: []openapi.M{{"name": "Last-Event-ID", "in": "header", "schema": openapi.Str()}},
		Errs:    []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The event stream.", Content: openapi.M{"text/event-stream": openapi.Str()},
			Headers: openapi.M{"Cache-Control": openapi.M{"schema": openapi.Str()}}}}})
}
