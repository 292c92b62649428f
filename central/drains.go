package central

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// Draining a shard (issue 35; docs/operations.md "Draining a shard"): the
// shard takes no new project, and each project it holds gets a move to
// the active shard with the most room, the moves queued at once and run
// a bounded number at a time (MoveQueue). The shard shows the progress of
// its last drain; draining it again starts moves for what is left (a
// failed move's project, say).

// Drain is the progress of a shard's last drain, as the admin API shows
// it on the shard.
type Drain struct {
	ID        string    `json:"id"`
	StartedAt time.Time `json:"started_at"`
	// Moves the drain started, and how many of them are queued, moving
	// (copying, catching up or switching), done, failed and cancelled.
	Moves     int `json:"moves"`
	Queued    int `json:"queued"`
	Moving    int `json:"moving"`
	Done      int `json:"done"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	// Finished once every move ended; FinishedAt is when the last did.
	Finished   bool       `json:"finished"`
	FinishedAt *time.Time `json:"finished_at"`
	// Failures are the failed moves (the first 20), each with its error.
	Failures []DrainFailure `json:"failures"`
}

// DrainFailure is one failed move of a drain.
type DrainFailure struct {
	MoveID    string `json:"move_id"`
	ProjectID string `json:"project_id"`
	Error     string `json:"error"`
}

// DrainShard makes shard name draining and queues a move for each
// project it holds (those being deleted, or moving already, aside), each
// to the active shard that has the most room once the moves before it are
// counted. It answers the shard with its drain. A shard that holds
// projects but has nowhere to send them (no other active shard that
// answers with wal_level=logical), or that does not answer itself, is
// 409 and nothing changes; a retired shard is 409; an unknown one 404.
func (c *Central) DrainShard(ctx context.Context, name string) (Shard, error) {
	if c.life.Queue == nil {
		return Shard{}, errors.New("central: DrainShard without a queue (SetLifecycle)")
	}
	if !shardNameRe.MatchString(name) {
		return Shard{}, httpapi.NotFound(fmt.Sprintf("no shard %q", name))
	}
	shards, err := c.ListShards(ctx, true)
	if err != nil {
		return Shard{}, err
	}
	i := slices.IndexFunc(shards, func(s Shard) bool { return s.Name == name })
	if i < 0 {
		return Shard{}, httpapi.NotFound(fmt.Sprintf("no shard %q", name))
	}
	source := shards[i]
	// Room on each shard a project may move to, less what this drain sends.
	var targets []Shard
	for _, s := range shards {
		if s.Name != name && moveTarget(s) == nil {
			targets = append(targets, s)
		}
	}
	err = pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		s, err := lockShard(ctx, tx, name)
		if errors.Is(err, pgx.ErrNoRows) {
			return httpapi.NotFound(fmt.Sprintf("no shard %q", name))
		}
		if err != nil {
			return err
		}
		if s.State == ShardRetired {
			return httpapi.Fail(httpapi.ErrConflict, fmt.Sprintf("shard %q is retired", name))
		}
		projects, err := drainCandidates(ctx, tx, name)
		if err != nil {
			return err
		}
		if len(projects) > 0 {
			if err := moveSource(source); err != nil {
				return err
			}
			if len(targets) == 0 {
				return httpapi.Fail(httpapi.ErrConflict, fmt.Sprintf("shard %q holds %s and no other active shard that answers with wal_level=logical can take them; add one (plinth shard add)",
					name, projectCount(len(projects))))
			}
			drainID, err := insertDrain(ctx, tx, name)
			if err != nil {
				return err
			}
			for _, p := range projects {
				t := roomiest(targets)
				if _, err := c.queueMove(ctx, tx, p, name, t.Name, drainID); err != nil {
					return err
				}
				t.Projects++
			}
		}
		if s.State != ShardDraining {
			if err := setShardState(ctx, tx, name, ShardDraining); err != nil {
				return err
			}
			return notifyCentral(ctx, tx, "shard:"+name)
		}
		return nil
	})
	if err != nil {
		return Shard{}, err
	}
	return c.GetShard(ctx, name)
}

// roomiest is the target with the most room (capacity less projects),
// the first by name on a tie.
func roomiest(targets []Shard) *Shard {
	best := &targets[0]
	for i := range targets[1:] {
		t := &targets[i+1]
		if room, bestRoom := t.Capacity-t.Projects, best.Capacity-best.Projects; room > bestRoom || (room == bestRoom && cmp.Less(t.Name, best.Name)) {
			best = t
		}
	}
	return best
}

// projectCount is "1 project" or "N projects".
func projectCount(n int) string {
	if n == 1 {
		return "1 project"
	}
	return fmt.Sprintf("%d projects", n)
}

// RunDrain runs the unfinished moves of shard's last drain in this
// process, at most concurrency at once, calling progress (when not nil)
// as each ends (one call at a time); a move a worker process runs meanwhile is waited for. It
// answers the shard, its drain final, once every move has ended.
func (c *Central) RunDrain(ctx context.Context, shard string, concurrency int, progress func(Move)) (Shard, error) {
	s, err := c.GetShard(ctx, shard)
	if err != nil || s.Drain == nil {
		return s, err
	}
	moves, err := drainMoves(ctx, c.pool, s.Drain.ID)
	if err != nil {
		return s, err
	}
	var mu sync.Mutex // progress is called by one move at a time
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(concurrency, 1))
	for _, m := range moves {
		if m.Ended() {
			continue
		}
		g.Go(func() error {
			// A worker process that has the move holds its lock: try again
			// until it ended (or the worker died and the lock is free).
			for {
				err := c.RunMove(gctx, m.ID, nil)
				if !errors.Is(err, errMoveBusy) {
					if err != nil {
						return err
					}
					break
				}
				if err := sleep(gctx, 250*time.Millisecond); err != nil {
					return err
				}
			}
			if progress != nil {
				ended, err := c.GetMove(gctx, m.ID)
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				progress(ended)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return s, err
	}
	return c.GetShard(ctx, shard)
}
