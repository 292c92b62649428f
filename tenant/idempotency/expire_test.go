package idempotency_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/idempotency"
)

// expire makes the project's entry for key expired.
func expire(t *testing.T, p *apitest.Project, key string) {
	t.Helper()
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = $1`, key)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// seedExpired inserts n expired entries named prefix-1 … prefix-n: stored
// responses and, every other one, a reservation whose lease lapsed.
func seedExpired(t *testing.T, p *apitest.Project, prefix string, n int) {
	t.Helper()
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `INSERT INTO idempotency_keys (key_id, key, method, path, body_hash, owner, locked_until, status, expires_at)
			SELECT 'public', $1 || '-' || i, 'POST', '/v1/test/widgets', '\x00', gen_random_uuid(), now() - interval '1 minute',
				CASE WHEN i % 2 = 0 THEN 201 END, now() - interval '1 minute'
			FROM generate_series(1, $2) i`, prefix, n)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// expiryJobs lists the project's idempotency.expire jobs, oldest first.
func expiryJobs(t *testing.T, env *apitest.Env, projectID string) []*rivertype.JobRow {
	t.Helper()
	ctx := context.Background()
	rows, err := env.DB.Pool.Query(ctx, `SELECT id FROM river.river_job
		WHERE kind = 'idempotency.expire' AND args->>'project_id' = $1 ORDER BY id`, projectID)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	var jobs []*rivertype.JobRow
	for _, id := range ids {
		j, err := env.Server.River.JobGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// onlyJob is the project's one expiry job.
func onlyJob(t *testing.T, env *apitest.Env, projectID string) *rivertype.JobRow {
	t.Helper()
	jobs := expiryJobs(t, env, projectID)
	if len(jobs) != 1 {
		t.Fatalf("project %s has %d expiry jobs, want 1", projectID, len(jobs))
	}
	return jobs[0]
}

func snoozes(t *testing.T, j *rivertype.JobRow) int {
	t.Helper()
	var m struct{ Snoozes int }
	if err := json.Unmarshal(j.Metadata, &m); err != nil {
		t.Fatal(err)
	}
	return m.Snoozes
}

// settle waits until the job rests after a run: completed, retryable,
// discarded, or scheduled by a snooze beyond the first before.
func settle(t *testing.T, env *apitest.Env, id int64, before int) *rivertype.JobRow {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := env.Server.River.JobGet(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		switch j.State {
		case rivertype.JobStateCompleted, rivertype.JobStateRetryable, rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
			return j
		case rivertype.JobStateScheduled:
			if snoozes(t, j) > before {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expiry job is still %s after 30 s", j.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// run makes the job due now, as if its time had come, and checks the
// state its run ends in.
func run(t *testing.T, env *apitest.Env, j *rivertype.JobRow, want rivertype.JobState) *rivertype.JobRow {
	t.Helper()
	if _, err := env.Server.River.JobRetry(context.Background(), j.ID); err != nil {
		t.Fatal(err)
	}
	return expectState(t, settle(t, env, j.ID, snoozes(t, j)), want)
}

func expectState(t *testing.T, j *rivertype.JobRow, want rivertype.JobState) *rivertype.JobRow {
	t.Helper()
	if j.State != want {
		t.Fatalf("the expiry job ended %s, want %s (errors %v)", j.State, want, j.Errors)
	}
	return j
}

// latestExpiry is when the project's last entry expires.
func latestExpiry(t *testing.T, p *apitest.Project) time.Time {
	t.Helper()
	var at time.Time
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT max(expires_at) FROM idempotency_keys`).Scan(&at)
	})
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// TestExpiryJobPerProject: the first key a project reserves inserts one
// expiry job, due once the key expired; more keys, from this process or
// another, insert none; a project that sent no key has none.
func TestExpiryJobPerProject(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil)
	q := env.NewProject("build")
	q.EnableWidgets()
	idle := env.NewProject("build")
	idle.EnableWidgets()
	body := map[string]any{"name": "w"}

	post(env, p.Key, "k-1", body).Expect(t, 201)
	post(env, p.Key, "k-2", body).Expect(t, 201)
	post(env, q.Key, "k-1", body).Expect(t, 201)
	post(env, idle.Key, "", body).Expect(t, 201)

	for _, pr := range []*apitest.Project{p, q} {
		j := onlyJob(t, env, pr.ID)
		last := latestExpiry(t, pr)
		if j.State != rivertype.JobStateScheduled || j.ScheduledAt.Before(last) || j.ScheduledAt.After(last.Add(time.Hour)) {
			t.Fatalf("project %s: job %s at %v, want scheduled just after the last key expires (%v)", pr.ID, j.State, j.ScheduledAt, last)
		}
	}
	if jobs := expiryJobs(t, env, idle.ID); len(jobs) != 0 {
		t.Fatalf("a project without keys has %d expiry jobs", len(jobs))
	}

	// Another instance knows nothing of the job: River's uniqueness, not
	// only the process's memory, keeps it to one.
	other := env.Instance(apitest.WithWidgets(nil))
	post(other, p.Key, "k-3", body).Expect(t, 201)
	if n := p.Count(`SELECT count(*) FROM idempotency_keys`); n != 3 {
		t.Fatalf("%d entries, want 3", n)
	}
	onlyJob(t, env, p.ID)
}

// TestExpiryJobLifecycle: the job deletes its project's expired entries
// and no other project's, waits while entries are live, completes when
// none is left, and a key reserved after that inserts a new job.
func TestExpiryJobLifecycle(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil, apitest.WithWorkers())
	q := env.NewProject("build")
	q.EnableWidgets()
	body := map[string]any{"name": "w"}
	post(env, p.Key, "live", body).Expect(t, 201)
	post(env, q.Key, "q-live", body).Expect(t, 201)
	seedExpired(t, p, "old", 5)
	seedExpired(t, q, "old", 5)

	j := run(t, env, onlyJob(t, env, p.ID), rivertype.JobStateScheduled)
	if n := p.Count(`SELECT count(*) FROM idempotency_keys WHERE key <> 'live'`); n != 0 {
		t.Fatalf("%d expired entries left", n)
	}
	if n := p.Count(`SELECT count(*) FROM idempotency_keys WHERE key = 'live'`); n != 1 {
		t.Fatal("a live entry was deleted")
	}
	if n := q.Count(`SELECT count(*) FROM idempotency_keys`); n != 6 {
		t.Fatalf("another project has %d entries left, want 6", n)
	}
	if qj := onlyJob(t, env, q.ID); qj.State != rivertype.JobStateScheduled || snoozes(t, qj) != 0 {
		t.Fatalf("another project's job ran: %s, %d snoozes", qj.State, snoozes(t, qj))
	}
	live := latestExpiry(t, p)
	if j.ScheduledAt.Before(live) || j.ScheduledAt.After(live.Add(idempotency.ExpirySlack+time.Minute)) {
		t.Fatalf("snoozed until %v, want the live entry's expiry %v plus the slack", j.ScheduledAt, live)
	}

	expire(t, p, "live")
	run(t, env, j, rivertype.JobStateCompleted)
	if n := p.Count(`SELECT count(*) FROM idempotency_keys`); n != 0 {
		t.Fatalf("%d entries left after the job completed", n)
	}

	// This process still takes the job for ahead, as it would be had its
	// time come; another one inserts the job River allows once the first
	// completed.
	other := env.Instance(apitest.WithWidgets(nil))
	post(other, p.Key, "after", body).Expect(t, 201)
	jobs := expiryJobs(t, env, p.ID)
	if len(jobs) != 2 || jobs[1].State != rivertype.JobStateScheduled {
		t.Fatalf("a key after the job completed: %d jobs, want a second, scheduled", len(jobs))
	}
}

// TestExpiryJobBounded: a run deletes at most PerRun entries, then the job
// comes back for the rest at once.
func TestExpiryJobBounded(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil, apitest.WithWorkers())
	seedExpired(t, p, "old", idempotency.PerRun+50)
	res, err := env.Server.River.Insert(context.Background(), idempotency.ExpireArgs{ProjectID: p.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	j := expectState(t, settle(t, env, res.Job.ID, 0), rivertype.JobStateCompleted)
	if n := snoozes(t, j); n != 1 {
		t.Fatalf("%d snoozes, want 1: one full run, then the rest", n)
	}
	if n := p.Count(`SELECT count(*) FROM idempotency_keys`); n != 0 {
		t.Fatalf("%d entries left", n)
	}
}

// TestExpiryJobUnknownProject: the job of a project that no longer exists
// is cancelled by the job gate, rather than failing until River discards
// it.
func TestExpiryJobUnknownProject(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	res, err := env.Server.River.Insert(context.Background(), idempotency.ExpireArgs{ProjectID: "prj_gone"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	expectState(t, settle(t, env, res.Job.ID, 0), rivertype.JobStateCancelled)
}
