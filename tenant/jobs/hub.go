package jobs

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Hub keeps one LISTEN connection per process and wakes the streams of a
// job when any instance writes an event of it (save notifies Channel with
// the job id). A wake-up carries no data: the stream reads the job's new
// events from the database, so nothing is lost to a coalesced signal.
// The same connection listens to the further channels the hub is built
// with, whose payload is a key streams subscribe to as a job's id is (a
// webhook listener's endpoint id on outbox.ListenChannel).
type Hub struct {
	pool     *pgxpool.Pool
	logger   *slog.Logger
	channels []string

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	done chan struct{}
}

// NewHub returns a hub over the shard pool listening to Channel and to
// channels; Run starts it.
func NewHub(pool *pgxpool.Pool, logger *slog.Logger, channels ...string) *Hub {
	return &Hub{pool: pool, logger: logger, channels: append([]string{Channel}, channels...),
		subs: map[string]map[chan struct{}]struct{}{}, done: make(chan struct{})}
}

// Done is closed when Run returns (the process is stopping): open streams
// end then.
func (h *Hub) Done() <-chan struct{} { return h.done }

// Subscribe returns a channel that receives a value whenever the job (or
// the key of another of the hub's channels) may have new events, and a
// func to stop.
func (h *Hub) Subscribe(jobID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[jobID] == nil {
		h.subs[jobID] = map[chan struct{}]struct{}{}
	}
	h.subs[jobID][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs[jobID], ch)
		if len(h.subs[jobID]) == 0 {
			delete(h.subs, jobID)
		}
		h.mu.Unlock()
	}
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // a wake-up is already pending
	}
}

func (h *Hub) wake(jobID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[jobID] {
		wake(ch)
	}
}

func (h *Hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, chans := range h.subs {
		for ch := range chans {
			wake(ch)
		}
	}
}

// Run listens until ctx ends, reconnecting after a lost connection (and
// waking every stream then, since notifications may have been missed).
func (h *Hub) Run(ctx context.Context) {
	defer close(h.done)
	h.ListenOn(ctx, h.pool)
}

// ListenOn listens to the job notifications of another shard's pool until
// ctx ends, as Run does on the hub's own: a job's events are written, and
// notified, on its project's shard.
func (h *Hub) ListenOn(ctx context.Context, pool *pgxpool.Pool) {
	for ctx.Err() == nil {
		err := h.listen(ctx, pool)
		if ctx.Err() != nil {
			return
		}
		h.logger.Warn("jobs LISTEN connection lost; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (h *Hub) listen(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if err := listenJobs(ctx, conn.Conn(), h.channels); err != nil {
		return err
	}
	defer unlistenJobs(context.WithoutCancel(ctx), conn.Conn(), h.channels)
	h.wakeAll()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		h.wake(n.Payload)
	}
}
