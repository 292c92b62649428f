package social

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// PublishArgs is the River job publishing one post.
type PublishArgs struct {
	ProjectID string `json:"project_id"`
	PostID    int64  `json:"post_id"`
	// KeyID and Test tell which key asked (events of a test key draw on
	// the test pool); a scheduled publish has no key.
	KeyID string `json:"key_id,omitempty"`
	Test  bool   `json:"test,omitempty"`
}

// Kind is the River job kind.
func (PublishArgs) Kind() string { return "social.publish" }

// publishAttempts bounds River's retries of a publish that failed on the
// server's side (database, shutdown); a platform's refusal is a result,
// not a retry.
const publishAttempts = 5

// InsertOpts implements river.JobArgsWithInsertOpts.
func (PublishArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: publishAttempts}
}

// PublishWorker publishes posts.
type PublishWorker struct {
	river.WorkerDefaults[PublishArgs]
	sv *Service
}

// Timeout implements river.Worker: a publish may upload videos to several accounts.
func (w *PublishWorker) Timeout(*river.Job[PublishArgs]) time.Duration { return time.Hour }

// target is one place a post goes: an account of a platform, or a
// platform with no connected account (which fails).
type target struct {
	Platform string
	Account  *Account
}

func (t target) key() string {
	if t.Account == nil {
		return t.Platform
	}
	return t.Platform + "/" + t.Account.ID
}

func resultKey(r Result) string {
	if r.AccountID == nil {
		return r.Platform
	}
	return r.Platform + "/" + *r.AccountID
}

// targets are the accounts a post goes to: for each of its platforms, the
// accounts of that platform it names, or else every account of the
// platform (one that is not connected gets a failed result saying so).
func targets(ctx context.Context, tx pgx.Tx, p Post) ([]target, error) {
	named, err := accountsOf(ctx, tx, p.AccountIDs)
	if err != nil {
		return nil, err
	}
	var out []target
	for _, platform := range p.Platforms {
		var of []Account
		for _, id := range p.AccountIDs {
			if a, ok := named[id]; ok && a.Platform == platform {
				of = append(of, a)
			}
		}
		if len(of) == 0 {
			if of, err = accountsOfPlatform(ctx, tx, platform); err != nil {
				return nil, err
			}
		}
		if len(of) == 0 {
			out = append(out, target{Platform: platform})
		}
		for i := range of {
			out = append(out, target{Platform: platform, Account: &of[i]})
		}
	}
	return out, nil
}

// Work publishes the post to each target not yet published, keeping each
// outcome as it comes (so a retried job never publishes twice where it
// already succeeded), then ends the publish in one transaction: the
// post's status and the event.
func (w *PublishWorker) Work(ctx context.Context, job *river.Job[PublishArgs]) error {
	a := job.Args
	// The job gate bound the project, with the test key of a test publish.
	s, err := tenant.JobScope(ctx)
	if err != nil {
		return err
	}
	err = w.sv.publishPost(ctx, s, a.PostID)
	if err != nil && job.Attempt >= job.MaxAttempts && ctx.Err() == nil {
		// The last attempt: end the publish with what was achieved rather
		// than leave the post publishing for ever.
		w.sv.logger.ErrorContext(ctx, "social: publishing failed on the server's side; ending it", "project", a.ProjectID, "post", a.PostID, "err", err)
		return w.sv.finish(ctx, s, a.PostID, "publishing could not complete on the server")
	}
	return err
}

func (sv *Service) publishPost(ctx context.Context, s *tenant.Scope, postID int64) error {
	var p postRow
	var ts []target
	err := s.Tx(ctx, func(tx pgx.Tx) error {
		var err error
		if p, err = getPostRow(ctx, tx, postID, false); err != nil {
			return err
		}
		if p.Status != StatusPublishing {
			return nil
		}
		ts, err = targets(ctx, tx, p.Post)
		return err
	})
	if errors.Is(err, httpapi.ErrNotFound) || (err == nil && p.Status != StatusPublishing) {
		return nil // deleted, or ended by an earlier attempt
	}
	if err != nil {
		return err
	}
	done := map[string]bool{}
	for _, r := range p.results {
		done[resultKey(r.Result)] = r.Status == ResultPublished
	}
	c := content(p.Post)
	for _, t := range ts {
		if done[t.key()] {
			continue
		}
		r, err := sv.publishOne(ctx, s, c, t)
		if err != nil {
			return err
		}
		if err := sv.saveResult(ctx, s, postID, r); err != nil {
			return err
		}
	}
	return sv.finish(ctx, s, postID, "")
}

func content(p Post) Content {
	images, videos := splitMedia(p.Media)
	return Content{Title: p.Title, Text: p.Content, Images: images, Videos: videos}
}

func failed(t target, msg string) Result {
	r := Result{Platform: t.Platform, Status: ResultFailed, Error: &msg}
	if t.Account != nil {
		r.AccountID = &t.Account.ID
	}
	return r
}

// publishOne publishes to one target and returns its outcome. Only a
// failure of the server itself (or its shutdown) is an error; anything
// the account or the platform refuses is a failed result.
func (sv *Service) publishOne(ctx context.Context, s *tenant.Scope, c Content, t target) (Result, error) {
	if t.Account == nil {
		return failed(t, "no connected "+t.Platform+" account"), nil
	}
	app := sv.apps[t.Platform]
	if app == nil {
		return failed(t, "no OAuth app is configured for "+t.Platform+" on this server"), nil
	}
	acct, sec, problem, err := sv.freshToken(ctx, s, app, t.Account.ID)
	switch {
	case errors.Is(err, httpapi.ErrNotFound):
		return failed(t, "the account was disconnected"), nil
	case err != nil:
		return Result{}, err
	case problem != "":
		return failed(t, problem), nil
	case acct.Status != AccountConnected:
		return failed(t, "the account is "+acct.Status+"; reconnect it"), nil
	}
	pctx, cancel := context.WithTimeout(ctx, sv.publishTimeout)
	defer cancel()
	out, err := app.adapter.Publish(pctx, app.API(sec.Token.AccessToken, sv.media), Target{ExternalID: acct.ExternalID, Name: acct.Name, Extra: sec.Extra}, c)
	if ctx.Err() != nil {
		return Result{}, ctx.Err() // stopping: the next attempt publishes it
	}
	if err != nil {
		var pe *PlatformError
		if errors.As(err, &pe) && pe.Unauthorized() {
			if err := s.Tx(ctx, func(tx pgx.Tx) error { return revokeAccount(ctx, tx, acct.ID) }); err != nil {
				return Result{}, err
			}
		}
		return failed(t, err.Error()), nil
	}
	r := Result{Platform: t.Platform, AccountID: &acct.ID, Status: ResultPublished, ExternalID: &out.ExternalID}
	if out.URL != "" {
		r.URL = &out.URL
	}
	return r, nil
}

// saveResult records one target's outcome on the post, replacing an
// earlier outcome of the same target.
func (sv *Service) saveResult(ctx context.Context, s *tenant.Scope, postID int64, r Result) error {
	return s.Tx(ctx, func(tx pgx.Tx) error {
		p, err := getPostRow(ctx, tx, postID, true)
		if err != nil || p.Status != StatusPublishing {
			return err
		}
		p.results = upsertResult(p.results, storedResult{Result: r, Run: p.run})
		_, err = updatePost(ctx, tx, p)
		return err
	})
}

func upsertResult(results []storedResult, r storedResult) []storedResult {
	for i := range results {
		if resultKey(results[i].Result) == resultKey(r.Result) {
			results[i] = r
			return results
		}
	}
	return append(results, r)
}

// finish ends a publish: the post's results are those of its current
// targets (a target with none gets failed with missing, when given: the
// end of an interrupted publish), plus this publish's results on targets
// since gone and earlier successes. Its status follows from them, and the
// event of the publish is emitted with it: social_post.published when a
// target succeeded in this publish, social_post.failed when every target
// tried in it failed.
func (sv *Service) finish(ctx context.Context, s *tenant.Scope, postID int64, missing string) error {
	return s.Tx(ctx, func(tx pgx.Tx) error {
		p, err := getPostRow(ctx, tx, postID, true)
		if errors.Is(err, httpapi.ErrNotFound) {
			return nil
		}
		if err != nil || p.Status != StatusPublishing {
			return err
		}
		ts, err := targets(ctx, tx, p.Post)
		if err != nil {
			return err
		}
		by := map[string]storedResult{}
		for _, r := range p.results {
			by[resultKey(r.Result)] = r
		}
		var results []storedResult
		kept := map[string]bool{}
		for _, t := range ts {
			r, ok := by[t.key()]
			if !ok {
				if missing == "" {
					continue
				}
				r = storedResult{Result: failed(t, missing), Run: p.run}
			}
			results, kept[t.key()] = append(results, r), true
		}
		for _, r := range p.results {
			if k := resultKey(r.Result); !kept[k] && (r.Run == p.run || r.Status == ResultPublished) {
				results, kept[k] = append(results, r), true
			}
		}
		published, tried, fresh := 0, 0, 0
		for _, r := range results {
			if r.Run == p.run {
				tried++
			}
			if r.Status == ResultPublished {
				published++
				if r.Run == p.run {
					fresh++
				}
			}
		}
		switch {
		case len(results) > 0 && published == len(results):
			p.Status = StatusPublished
		case published > 0:
			p.Status = StatusPartiallyPublished
		default:
			p.Status = StatusFailed
		}
		if fresh > 0 {
			t := time.Now().UTC()
			p.PublishedAt = &t
		}
		p.results, p.Post = results, normalise(p.Post)
		post, err := updatePost(ctx, tx, p)
		if err != nil {
			return err
		}
		topic := ""
		switch {
		case fresh > 0:
			topic = TopicPublished
		case tried > 0:
			topic = TopicFailed
		}
		if topic == "" || sv.events == nil {
			return nil
		}
		return sv.events.Emit(ctx, tx, s, topic, post)
	})
}
