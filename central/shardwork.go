package central

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/queue"
)

// The work a process runs per shard. A project's jobs are stored, and
// its job events notified, on its own shard (a job is inserted in the
// transaction of the change that makes it), so each shard needs a River
// client that works its jobs, with its liveness lock, and a LISTEN of its
// job events for the SSE streams. The default shard's are the Server's
// own (River, JobEvents.Run); the others follow central.shards: started
// at Start for every shard not retired and, on every instance, when a
// shard is added (Central.ShardsChanged).

// shardWork is what runs on one shard other than "default".
type shardWork struct {
	pool   *pgxpool.Pool
	river  *queue.Client // nil in a process that works no jobs
	live   *queue.Liveness
	cancel context.CancelFunc
}

// shardRetry is how soon a shard whose work could not start (its server
// did not answer) is tried again.
const shardRetry = 5 * time.Second

// followShards starts the work of each shard as it appears, until ctx
// ends. It lists the shards at start and whenever one is added or changes
// state; after a failure, again shardRetry later.
func (s *Server) followShards(ctx context.Context) {
	for {
		var retry <-chan time.Time
		if err := s.startShards(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("starting the work of a shard; retrying", "err", err, "in", shardRetry)
			retry = time.After(shardRetry)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.Central.ShardsChanged():
		case <-retry:
		}
	}
}

// startShards starts the work of every shard that is neither "default"
// nor retired nor already running.
func (s *Server) startShards(ctx context.Context) error {
	shards, err := s.Central.ListShards(ctx, false)
	if err != nil {
		return err
	}
	var errs []error
	for _, sh := range shards {
		if sh.Name == ShardDefault || sh.State == ShardRetired {
			continue
		}
		s.shardMu.Lock()
		_, running := s.shardWork[sh.Name]
		s.shardMu.Unlock()
		if running {
			continue
		}
		if err := s.startShard(ctx, sh.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// startShard starts the LISTEN of a shard's job events and, in a process
// that works jobs, its River client.
func (s *Server) startShard(ctx context.Context, name string) error {
	pool, err := s.Central.ShardPool(name)
	if err != nil {
		return err
	}
	s.Metrics.WatchPool("shard:"+name, pool) // plinth_db_pool_*{pool="shard:NAME"}
	wctx, cancel := context.WithCancel(ctx)
	w := &shardWork{pool: pool, cancel: cancel}
	if s.opts.Workers {
		opts := s.riverOpts
		opts.Middleware = append(slices.Clip(opts.Middleware), s.Central.JobGateOn(name))
		if w.river, err = queue.New(pool, s.riverWorkers, opts); err != nil {
			cancel()
			return err
		}
		if w.live, err = queue.StartLiveness(wctx, pool, w.river.ID(), 5*time.Second, s.logger); err != nil {
			cancel()
			return err
		}
		events, _ := w.river.SubscribeConfig(outcomeEvents())
		go s.jobOutcomes(wctx, events, pool)
		if err := w.river.Start(wctx); err != nil {
			w.live.Stop()
			cancel()
			return err
		}
	}
	go s.JobEvents.ListenOn(wctx, pool)
	s.shardMu.Lock()
	s.shardWork[name] = w
	s.shardMu.Unlock()
	s.logger.Info("working shard", "shard", name, "workers", s.opts.Workers)
	return nil
}

// stopShards soft-stops every shard's River client side by side, then
// ends the rest of their work.
func (s *Server) stopShards(ctx context.Context) error {
	s.shardMu.Lock()
	work := s.shardWork
	s.shardWork = map[string]*shardWork{}
	s.shardMu.Unlock()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, w := range work {
		wg.Go(func() {
			if w.river != nil {
				if err := w.river.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				w.live.Stop()
			}
			w.cancel()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// outcomeEvents are the River events the job metrics and the delivery
// wakers follow. River drops events when the channel is full; a burst of
// paced deliveries snoozes thousands of jobs within a second, and a
// dropped snooze leaves its job to the poll.
func outcomeEvents() *river.SubscribeConfig {
	return &river.SubscribeConfig{ChanSize: 10_000, Kinds: []river.EventKind{river.EventKindJobCompleted,
		river.EventKindJobFailed, river.EventKindJobCancelled, river.EventKindJobSnoozed}}
}
