package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plinth-dev/plinth/central"
)

// The shards: the PostgreSQL servers that hold project schemas
// (docs/operations.md, "Shards"). The commands mirror the admin API's
// /admin/api/shards; a shard's URL goes in once and is never printed.

type shardAddCmd struct {
	Name     string `required:"" help:"Shard name: 1 to 31 lowercase letters, digits or _, starting with a letter."`
	URL      string `required:"" name:"url" help:"The server's connection URL, postgres://user:password@host:port/database (stored sealed; never printed)."`
	Capacity *int   `help:"Projects the shard is meant to hold (default 10000): a new project goes to the active shard with the most room."`
	tokenFlag
}

func (c *shardAddCmd) Run(e *env) error {
	if err := c.checkCapacity(); err != nil {
		return err
	}
	p := central.ShardParams{Name: c.Name, URL: c.URL}
	if c.Capacity != nil {
		p.Capacity = *c.Capacity
	}
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		s, err := cen.AddShard(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("shard %q: %w", c.Name, err)
		}
		return s, nil
	})
}

func (c *shardAddCmd) checkCapacity() error {
	if c.Capacity != nil && *c.Capacity < 1 {
		return fmt.Errorf("--capacity: want a positive number of projects, got %d", *c.Capacity)
	}
	return nil
}

// Remote sends the shard's URL to the server, which checks it from
// where it runs (the URL is never printed either way).
func (c *shardAddCmd) Remote(e *env, api *adminClient) error {
	if err := c.checkCapacity(); err != nil {
		return err
	}
	var s central.Shard
	if err := api.do(e.ctx, "POST", "/shards", central.AdminAddShardRequest{Name: c.Name, URL: c.URL, Capacity: c.Capacity}, &s); err != nil {
		return fmt.Errorf("shard %q: %w", c.Name, err)
	}
	return e.printJSON(s)
}

type shardListCmd struct {
	JSON bool `name:"json" help:"Print {data: [shards]} as the admin API does, instead of a table."`
	remoteFlags
}

func (c *shardListCmd) Run(e *env) error {
	var shards []central.Shard
	err := e.adminDo(func(ctx context.Context, cen *central.Central) error {
		var err error
		shards, err = cen.ListShards(ctx, true)
		return err
	})
	if err != nil {
		return err
	}
	return c.print(e, shards)
}

func (c *shardListCmd) Remote(e *env, api *adminClient) error {
	var l struct {
		Data []central.Shard `json:"data"`
	}
	if err := api.do(e.ctx, "GET", "/shards", nil, &l); err != nil {
		return err
	}
	return c.print(e, l.Data)
}

// print writes the shards as a table, or as the admin API's {data}.
func (c *shardListCmd) print(e *env, shards []central.Shard) error {
	if c.JSON {
		return e.printJSON(map[string]any{"data": shards})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tPROJECTS\tCAPACITY\tWAL_LEVEL\tVERSION\tREACHABLE")
	for _, s := range shards {
		reach := "yes"
		switch {
		case s.State == central.ShardRetired:
			reach = "-" // not asked
		case !s.Reachable:
			reach = "no: " + s.Error
		}
		version, _, _ := strings.Cut(s.Version, " ") // 15.8, not its build's "(Debian 15.8-1)"
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", s.Name, s.State, s.Projects, s.Capacity, dash(s.WalLevel), dash(version), reach)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type shardDrainCmd struct {
	Name        string `required:"" help:"Shard name."`
	Detach      bool   `help:"Queue the moves for the servers' workers (PLINTH_MOVE_CONCURRENCY each) and print the shard at once, instead of running them here (with --url: following them) to their end."`
	Concurrency *int   `help:"How many moves run at once here, without --detach (default 4); with --url the server's workers run them."`
	remoteFlags
}

// Run makes the shard draining and queues a move for each project it
// holds; unless --detach, runs them here, --concurrency at a time (a
// server's worker that picks one up meanwhile finds it taken, or this
// waits for the one it took), printing a line on stderr as each ends
// and a summary, then the shard. A drain with a failed move exits 1.
func (c *shardDrainCmd) Run(e *env) error {
	concurrency := 4
	if c.Concurrency != nil {
		concurrency = *c.Concurrency
	}
	if concurrency < 1 || concurrency > 64 {
		return fmt.Errorf("--concurrency: want 1 to 64 moves at once, got %d", concurrency)
	}
	return e.adminDo(func(ctx context.Context, cen *central.Central) error {
		start := time.Now()
		s, err := cen.DrainShard(ctx, c.Name)
		if err != nil {
			return err // its detail names the shard
		}
		if c.started(e, s) {
			return e.printJSON(s)
		}
		d := s.Drain
		ended := d.Done + d.Failed + d.Cancelled
		s, err = cen.RunDrain(ctx, c.Name, concurrency, func(m central.Move) {
			ended++
			line := fmt.Sprintf("drain %s: %d/%d: project %s to %s: %s", c.Name, ended, d.Moves, m.ProjectID, m.To, m.Phase)
			if m.Error != nil {
				line += ": " + *m.Error
			}
			fmt.Fprintln(e.stderr, line)
		})
		if err != nil {
			return fmt.Errorf("drain %s: %w", c.Name, err)
		}
		return c.ended(e, s, start)
	})
}

// started reports the drain just started, and whether the command ends
// there: nothing to move, or --detach.
func (c *shardDrainCmd) started(e *env, s central.Shard) bool {
	if s.Drain == nil || s.Drain.Finished {
		fmt.Fprintf(e.stderr, "shard %s is draining: new projects go to other shards; it holds no project to move.\n", c.Name)
		return true
	}
	if d := s.Drain; c.Detach {
		fmt.Fprintf(e.stderr, "shard %s is draining: %s queued for the servers' workers (plinth shard list; GET /admin/api/shards/%s).\n",
			c.Name, plural(d.Moves-d.Done-d.Failed-d.Cancelled, "move"), c.Name)
		return true
	}
	return false
}

// ended prints the summary of a finished drain and the shard; a project
// that did not move is an error.
func (c *shardDrainCmd) ended(e *env, s central.Shard, start time.Time) error {
	d := s.Drain
	fmt.Fprintf(e.stderr, "drain %s: %d moved, %d failed, %d cancelled in %s; the shard holds %s.\n",
		c.Name, d.Done, d.Failed, d.Cancelled, time.Since(start).Round(100*time.Millisecond), plural(s.Projects, "project"))
	if err := e.printJSON(s); err != nil {
		return err
	}
	if d.Failed > 0 || d.Cancelled > 0 {
		return fmt.Errorf("drain %s: %s did not move (drain again to retry)", c.Name, plural(d.Failed+d.Cancelled, "project"))
	}
	return nil
}

// Remote starts the drain on the server, whose workers run the moves,
// and unless --detach follows it to its end: a line as moves end, one
// per failure, then the summary and the shard, as the database mode.
func (c *shardDrainCmd) Remote(e *env, api *adminClient) error {
	if c.Concurrency != nil {
		return errors.New("--concurrency: with --url the server's workers run the moves, PLINTH_MOVE_CONCURRENCY at a time each; leave it out")
	}
	start := time.Now()
	path := "/shards/" + url.PathEscape(c.Name)
	var s central.Shard
	if err := api.do(e.ctx, "POST", path+"/drain", nil, &s); err != nil {
		return err // its detail names the shard
	}
	if c.started(e, s) {
		return e.printJSON(s)
	}
	ended := s.Drain.Done + s.Drain.Failed + s.Drain.Cancelled
	told := map[string]bool{}
	err := follow(e.ctx, func() (bool, error) {
		if err := api.do(e.ctx, "GET", path, nil, &s); err != nil {
			return false, err
		}
		d := s.Drain
		if d == nil {
			return false, fmt.Errorf("drain %s: the shard shows no drain", c.Name)
		}
		for _, f := range d.Failures {
			if !told[f.MoveID] {
				told[f.MoveID] = true
				fmt.Fprintf(e.stderr, "drain %s: project %s: failed: %s\n", c.Name, f.ProjectID, f.Error)
			}
		}
		if n := d.Done + d.Failed + d.Cancelled; n != ended {
			ended = n
			fmt.Fprintf(e.stderr, "drain %s: %d/%d ended: %d moved, %d failed, %d cancelled\n", c.Name, n, d.Moves, d.Done, d.Failed, d.Cancelled)
		}
		return d.Finished, nil
	})
	if err != nil {
		return fmt.Errorf("drain %s: %w", c.Name, err)
	}
	return c.ended(e, s, start)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

type shardRetireCmd struct {
	Name string `required:"" help:"Shard name."`
	remoteFlags
}

func (c *shardRetireCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		return cen.SetShardState(ctx, c.Name, central.ShardRetired) // an error's detail names the shard
	})
}

func (c *shardRetireCmd) Remote(e *env, api *adminClient) error {
	var s central.Shard
	if err := api.do(e.ctx, "POST", "/shards/"+url.PathEscape(c.Name)+"/retire", nil, &s); err != nil {
		return err
	}
	return e.printJSON(s)
}

type projectMoveCmd struct {
	Project string `required:"" help:"Project id (prj_…)."`
	To      string `required:"" help:"The shard to move the project to (plinth shard list)."`
	Detach  bool   `help:"Queue the move for a server's worker and print it at once, instead of running it here (with --url: following it) to its end."`
	remoteFlags
}

// Run starts the move and, unless --detach, runs it in this process
// (a server's worker that picks up its job meanwhile finds it taken),
// printing a line on stderr at each phase and the move at the end; a
// move that fails or is cancelled exits 1.
func (c *projectMoveCmd) Run(e *env) error {
	return e.adminDo(func(ctx context.Context, cen *central.Central) error {
		m, err := cen.StartMove(ctx, c.Project, c.To)
		if err != nil {
			return fmt.Errorf("project %q: %w", c.Project, err)
		}
		if !c.Detach {
			err = cen.RunMove(ctx, m.ID, func(m central.Move) {
				fmt.Fprintf(e.stderr, "move %s: %s (rows copied %d)\n", m.ID, m.Phase, m.RowsCopied)
			})
			if err != nil {
				return fmt.Errorf("move %s: %w", m.ID, err)
			}
			if m, err = cen.GetMove(ctx, m.ID); err != nil {
				return err
			}
		}
		return e.moved(m)
	})
}

// moved prints the move; one that failed or was cancelled is an error.
func (e *env) moved(m central.Move) error {
	if err := e.printJSON(m); err != nil {
		return err
	}
	if m.Phase == central.MoveFailed || m.Phase == central.MoveCancelled {
		return fmt.Errorf("move %s %s", m.ID, m.Phase)
	}
	return nil
}

// Remote starts the move on the server, whose worker runs it, and
// unless --detach follows it to its end with a line per phase.
func (c *projectMoveCmd) Remote(e *env, api *adminClient) error {
	var m central.Move
	if err := api.do(e.ctx, "POST", "/projects/"+url.PathEscape(c.Project)+"/move", central.AdminMoveRequest{Shard: c.To}, &m); err != nil {
		return fmt.Errorf("project %q: %w", c.Project, err)
	}
	if !c.Detach {
		phase := ""
		err := follow(e.ctx, func() (bool, error) {
			if err := api.do(e.ctx, "GET", "/moves/"+url.PathEscape(m.ID), nil, &m); err != nil {
				return false, err
			}
			if m.Phase != phase {
				phase = m.Phase
				fmt.Fprintf(e.stderr, "move %s: %s (rows copied %d)\n", m.ID, m.Phase, m.RowsCopied)
			}
			return m.Phase == central.MoveDone || m.Phase == central.MoveFailed || m.Phase == central.MoveCancelled, nil
		})
		if err != nil {
			return fmt.Errorf("move %s: %w", m.ID, err)
		}
	}
	return e.moved(m)
}
