package central

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/oauth"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant"
)

// Shards: the PostgreSQL servers that hold project schemas
// (central.shards). "default" is the central database itself; the others
// are added by an operator (plinth shard add, POST /admin/api/shards),
// their connection URLs sealed at rest. A project's placement names its
// shard, and every path reaches the project's schema through that shard's
// pool (ShardPool), opened on first use in each process.

// ShardDefault is the central database's own shard.
const ShardDefault = "default"

// Shard states.
const (
	ShardActive   = "active"   // takes new projects
	ShardDraining = "draining" // takes none; its projects move away
	ShardRetired  = "retired"  // holds none
)

// DefaultShardCapacity is a new shard's capacity in projects unless the
// operator names one: what one PostgreSQL server holds at about 1 % of a
// core when idle (docs/performance.md).
const DefaultShardCapacity = 10000

// minShardVersion is the oldest PostgreSQL a shard may run.
const minShardVersion = 150000

var shardNameRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}$`)

// pgURLRe: a shard's address is a URL (a keyword/value string would be
// parsed too, and a typo in it read as a default).
var pgURLRe = regexp.MustCompile(`^postgres(ql)?://[^\s]+$`)

// Shard is a shard as the admin API and plinth shard list show it.
type Shard struct {
	Name      string    `json:"name"`
	State     string    `json:"state"`
	Capacity  int       `json:"capacity"`
	Projects  int       `json:"projects"`
	CreatedAt time.Time `json:"created_at"`
	// What the server answers now (ListShards with probe).
	Reachable bool   `json:"reachable"`
	Version   string `json:"version,omitempty"`
	WalLevel  string `json:"wal_level,omitempty"`
	Error     string `json:"error,omitempty"`
	// Drain is the progress of the shard's last drain (null: never drained).
	Drain *Drain `json:"drain"`
}

// shardPools holds the pools of the shards other than "default", each
// opened on first use from its sealed URL.
type shardPools struct {
	mu     sync.Mutex
	pools  map[string]*pgxpool.Pool
	owned  []*pgxpool.Pool // opened here, closed by Close
	sealer *oauth.Sealer
	// queues are River clients of the shards' jobs that work none
	// (shardQueue).
	queues map[string]*queue.Client
}

func newShardPools(secret []byte) *shardPools {
	return &shardPools{pools: map[string]*pgxpool.Pool{}, queues: map[string]*queue.Client{}, sealer: oauth.NewPurposeSealer(secret, "shard url seal v1")}
}

// ShardPool returns the pool of a shard: every read or write of a
// project's schema goes through the pool of the shard its placement names
// (Project.Shard). "default" is the central pool; another shard's pool is
// opened from central.shards the first time it is asked for.
func (c *Central) ShardPool(shard string) (*pgxpool.Pool, error) {
	if shard == ShardDefault {
		return c.pool, nil
	}
	c.shards.mu.Lock()
	defer c.shards.mu.Unlock()
	if p, ok := c.shards.pools[shard]; ok {
		return p, nil
	}
	// A lookup of one row by its key: it runs once per shard and process.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sealed, err := shardURL(ctx, c.pool, shard)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("central: unknown shard %q", shard)
	}
	if err != nil {
		return nil, fmt.Errorf("central: shard %q: %w", shard, err)
	}
	url, err := c.shards.sealer.Open(sealed, []byte(shard))
	if err != nil {
		return nil, fmt.Errorf("central: shard %q: its URL does not open under this server secret: %w", shard, err)
	}
	cfg, err := PoolConfig(string(url))
	if err != nil {
		return nil, fmt.Errorf("central: shard %q: %w", shard, err)
	}
	p, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects on first use
	if err != nil {
		return nil, fmt.Errorf("central: shard %q: %w", shard, err)
	}
	c.shards.pools[shard] = p
	c.shards.owned = append(c.shards.owned, p)
	return p, nil
}

// shardQueue is a River client of shard's jobs, to list, retry and
// delete them (it works none): the Lifecycle's on "default", one made on
// first use on another shard. Inserts need none of these: a job is
// inserted in the transaction of its project's shard, by any client.
func (c *Central) shardQueue(shard string) (*queue.Client, error) {
	if shard == ShardDefault {
		return c.life.Queue, nil
	}
	pool, err := c.ShardPool(shard)
	if err != nil {
		return nil, err
	}
	c.shards.mu.Lock()
	defer c.shards.mu.Unlock()
	if q, ok := c.shards.queues[shard]; ok {
		return q, nil
	}
	q, err := queue.New(pool, river.NewWorkers(), queue.Options{Logger: c.logger})
	if err != nil {
		return nil, err
	}
	c.shards.queues[shard] = q
	return q, nil
}

// AddShardPool makes pool the shard name's in this process: for tests
// that place a project on a database of their own.
func (c *Central) AddShardPool(name string, pool *pgxpool.Pool) {
	c.shards.mu.Lock()
	defer c.shards.mu.Unlock()
	c.shards.pools[name] = pool
}

// Close closes the shard pools c opened (not the central pool).
func (c *Central) Close() {
	c.shards.mu.Lock()
	owned := c.shards.owned
	c.shards.owned, c.shards.pools, c.shards.queues = nil, map[string]*pgxpool.Pool{}, map[string]*queue.Client{}
	c.shards.mu.Unlock()
	for _, p := range owned {
		p.Close()
	}
}

// PoolConfig is the configuration of a pool of the central database or a
// shard: at least 20 connections, each replaced after about ten minutes
// and closed after a minute unused (a backend keeps the catalog of every
// schema it touched until it ends), and tenant reads' bindings kept on
// the connection (tenant.ConfigurePool).
func PoolConfig(url string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if cfg.MaxConns < 20 {
		cfg.MaxConns = int32(max(20, 4*runtime.NumCPU()))
	}
	cfg.MaxConnLifetime, cfg.MaxConnLifetimeJitter, cfg.MaxConnIdleTime = connLifetime, connLifetimeJitter, connIdleTime
	tenant.ConfigurePool(cfg)
	return cfg, nil
}

// ShardParams are an operator's new shard.
type ShardParams struct {
	Name     string
	URL      string
	Capacity int // 0: DefaultShardCapacity
}

// AddShard checks the server at p.URL (reachable, PostgreSQL 15 or newer,
// wal_level=logical, a role that may create schemas and the publications
// and subscriptions a move needs), migrates River's tables there, and
// records the shard with its URL sealed. Every instance learns of it
// (NOTIFY) and its workers start on it; its spare schemas follow.
func (c *Central) AddShard(ctx context.Context, p ShardParams) (Shard, error) {
	if p.Capacity == 0 {
		p.Capacity = DefaultShardCapacity
	}
	var v httpapi.Validator
	v.Check(shardNameRe.MatchString(p.Name), "name", "must be 1 to 31 lowercase letters, digits or _, starting with a letter")
	v.Check(p.Name != ShardDefault, "name", `"default" is the central database's shard`)
	v.Check(p.Capacity > 0, "capacity", "must be a positive number of projects")
	cfg, perr := pgxpool.ParseConfig(p.URL)
	v.Check(pgURLRe.MatchString(p.URL) && perr == nil, "url", "must be a PostgreSQL connection URL (postgres://user:password@host:port/database)")
	if err := v.Err(); err != nil {
		return Shard{}, err
	}
	exists, err := shardExists(ctx, c.pool, p.Name)
	if err != nil {
		return Shard{}, err
	}
	if exists {
		return Shard{}, httpapi.Fail(httpapi.ErrConflict, fmt.Sprintf("a shard named %q exists", p.Name))
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return Shard{}, httpapi.Invalid("url", err.Error())
	}
	defer pool.Close()
	probe := probeShard(ctx, pool)
	if !probe.Reachable {
		return Shard{}, httpapi.Invalid("url", "the server does not answer: "+probe.Error)
	}
	if err := checkShardServer(ctx, pool); err != nil {
		return Shard{}, err
	}
	// The project schemas' exclusion constraints (bookings) need
	// btree_gist, which the central database's first migration creates
	// there: a trusted extension, so a role with CREATE may add it.
	if err := createShardExtensions(ctx, pool); err != nil {
		return Shard{}, httpapi.Invalid("url", "creating the extension btree_gist the project schemas need (install PostgreSQL's contrib modules): "+err.Error())
	}
	if err := queue.Migrate(ctx, pool); err != nil {
		return Shard{}, fmt.Errorf("migrate River on shard %s: %w", p.Name, err)
	}
	sealed := c.shards.sealer.Seal([]byte(p.URL), []byte(p.Name))
	var s Shard
	err = pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var err error
		if s, err = insertShard(ctx, tx, p.Name, sealed, p.Capacity); err != nil {
			return err
		}
		return notifyCentral(ctx, tx, "shard:"+p.Name)
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation: added at the same time
		return Shard{}, httpapi.Fail(httpapi.ErrConflict, fmt.Sprintf("a shard named %q exists", p.Name))
	}
	if err != nil {
		return Shard{}, err
	}
	s.Reachable, s.Version, s.WalLevel = true, probe.Version, probe.WalLevel
	c.kickSpares() // its spares, where this process keeps them
	return s, nil
}

// checkShardServer refuses a server a shard cannot run on, as a 422 on
// its url: too old, wal_level not logical (a move replicates the
// project's tables with logical replication), or a role that cannot
// create schemas, publications and subscriptions.
func checkShardServer(ctx context.Context, pool *pgxpool.Pool) error {
	srv, err := readShardServer(ctx, pool)
	version, walLevel, super, replication, create := srv.version, srv.walLevel, srv.super, srv.replication, srv.create
	if err != nil {
		return httpapi.Invalid("url", "reading the server's settings: "+err.Error())
	}
	switch {
	case version < minShardVersion:
		return httpapi.Invalid("url", fmt.Sprintf("the server runs PostgreSQL %d.%d; a shard needs 15 or newer", version/10000, version%10000))
	case walLevel != "logical":
		return httpapi.Invalid("url", fmt.Sprintf("the server has wal_level=%s; a shard needs wal_level=logical (moving a project replicates its tables), set in postgresql.conf and restart the server", walLevel))
	case !create:
		return httpapi.Invalid("url", "the role may not create schemas in this database (GRANT CREATE ON DATABASE)")
	case !super && !replication:
		return httpapi.Invalid("url", "the role needs the REPLICATION attribute (or to be a superuser) for the publications and subscriptions of a move")
	case !super && version < 160000:
		return httpapi.Invalid("url", "on PostgreSQL 15 only a superuser may create the subscriptions of a move; use a superuser role, or PostgreSQL 16 with pg_create_subscription")
	}
	if !super {
		sub, err := roleMaySubscribe(ctx, pool)
		if err != nil {
			return httpapi.Invalid("url", "reading the role's memberships: "+err.Error())
		}
		if !sub {
			return httpapi.Invalid("url", "the role needs membership of pg_create_subscription (or to be a superuser) for the subscriptions of a move")
		}
	}
	return nil
}

// probe fills in what shard s's server answers now (probeShard), or why
// its pool cannot be had.
func (c *Central) probe(ctx context.Context, s *Shard) {
	pool, err := c.ShardPool(s.Name)
	if err != nil {
		s.Error = err.Error()
		return
	}
	p := probeShard(ctx, pool)
	s.Reachable, s.Version, s.WalLevel, s.Error = p.Reachable, p.Version, p.WalLevel, p.Error
}

// probeShard asks the server its version and wal_level, within 3 s.
func probeShard(ctx context.Context, pool *pgxpool.Pool) Shard {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var s Shard
	var err error
	if s.Version, s.WalLevel, err = shardVersion(ctx, pool); err != nil {
		s.Error = err.Error()
		return s
	}
	s.Reachable = true
	return s
}

// ListShards lists the shards with their projects and, with probe, what
// each server not retired answers now (asked side by side, 3 s at most).
func (c *Central) ListShards(ctx context.Context, probe bool) ([]Shard, error) {
	shards, err := listShards(ctx, c.pool)
	if err != nil || !probe {
		return shards, err
	}
	var wg sync.WaitGroup
	for i := range shards {
		if shards[i].State == ShardRetired {
			continue // it holds nothing; its server may be gone
		}
		wg.Go(func() { c.probe(ctx, &shards[i]) })
	}
	wg.Wait()
	for i := range shards {
		if shards[i].Drain, err = latestDrain(ctx, c.pool, shards[i].Name); err != nil {
			return nil, err
		}
	}
	return shards, nil
}

// GetShard is one shard, probed.
func (c *Central) GetShard(ctx context.Context, name string) (Shard, error) {
	if !shardNameRe.MatchString(name) {
		return Shard{}, httpapi.NotFound(fmt.Sprintf("no shard %q", name))
	}
	shards, err := c.ListShards(ctx, false)
	if err != nil {
		return Shard{}, err
	}
	for _, s := range shards {
		if s.Name == name {
			if s.State == ShardRetired {
				return s, nil // not asked: it holds nothing, its server may be gone
			}
			c.probe(ctx, &s)
			s.Drain, err = latestDrain(ctx, c.pool, s.Name)
			return s, err
		}
	}
	return Shard{}, httpapi.NotFound(fmt.Sprintf("no shard %q", name))
}

// SetShardState makes a shard draining or retired. A shard is retired
// only when it holds no project (409 otherwise), and the central
// database's shard is never retired. A retired shard stays retired.
func (c *Central) SetShardState(ctx context.Context, name, state string) (Shard, error) {
	if state != ShardDraining && state != ShardRetired {
		return Shard{}, httpapi.Invalid("state", "must be draining or retired")
	}
	if !shardNameRe.MatchString(name) {
		return Shard{}, httpapi.NotFound(fmt.Sprintf("no shard %q", name))
	}
	var s Shard
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		// Placements are counted under the shard row's lock: a creation
		// locks it too (chooseShard), so none lands on a shard being retired.
		var err error
		s, err = lockShard(ctx, tx, name)
		if errors.Is(err, pgx.ErrNoRows) {
			return httpapi.NotFound(fmt.Sprintf("no shard %q", name))
		}
		if err != nil {
			return err
		}
		switch {
		case s.State == state:
			return nil
		case s.State == ShardRetired:
			return httpapi.Fail(httpapi.ErrConflict, fmt.Sprintf("shard %q is retired", name))
		case state == ShardRetired && name == ShardDefault:
			return httpapi.Fail(httpapi.ErrConflict, `the "default" shard is the central database and cannot be retired`)
		case state == ShardRetired && s.Projects > 0:
			return httpapi.Fail(httpapi.ErrConflict, fmt.Sprintf("shard %q holds %s: a shard is retired once it holds none (plinth shard drain moves them away)", name, projectCount(s.Projects)))
		}
		if err := setShardState(ctx, tx, name, state); err != nil {
			return err
		}
		s.State = state
		return notifyCentral(ctx, tx, "shard:"+name)
	})
	return s, err
}

// errNoActiveShard: every shard drains or is retired.
var errNoActiveShard = httpapi.Fail(httpapi.ErrUnavailable, "no shard takes new projects (every shard is draining or retired); add one with plinth shard add")

// chooseShard picks the shard of a new project in tx: the one named, which
// must be active, or else the active shard with the most room (capacity
// less its projects; the fullest last, so one over its capacity still
// takes a project when every shard is full, and a warning says so). The
// chosen shard's row is locked for the transaction, so a shard is not
// retired under a project being placed on it.
func (c *Central) chooseShard(ctx context.Context, tx pgx.Tx, named string) (string, error) {
	if named != "" {
		if !shardNameRe.MatchString(named) {
			return "", httpapi.Invalid("shard", fmt.Sprintf("no shard %q", named))
		}
		state, err := shareShardState(ctx, tx, named)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", httpapi.Invalid("shard", fmt.Sprintf("no shard %q", named))
		}
		if err != nil {
			return "", err
		}
		if state != ShardActive {
			return "", httpapi.Fail(httpapi.ErrConflict, fmt.Sprintf("shard %q is %s and takes no new project", named, state))
		}
		return named, nil
	}
	name, room, err := roomiestShard(ctx, tx)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", errNoActiveShard
	}
	if err != nil {
		return "", err
	}
	if room <= 0 {
		c.logger.Warn("every active shard is at its capacity; the new project goes to the one with the most room (add a shard: plinth shard add)",
			"shard", name, "over_by", 1-room)
	}
	return name, nil
}

// signalShards wakes whoever follows the shards (ShardsChanged).
func (c *Central) signalShards() {
	select {
	case c.shardsChanged <- struct{}{}:
	default:
	}
}

// ShardsChanged is signalled when a shard was added or changed state, on
// any instance, and whenever the central LISTEN connection (re)starts:
// a process that runs work per shard lists the shards again then.
func (c *Central) ShardsChanged() <-chan struct{} { return c.shardsChanged }
