package social

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/internal/oauth"
	"github.com/plinth-dev/plinth/tenant"
)

// The pillar's not-found failures.
var (
	errNoPost    = httpapi.NotFound("no such social post")
	errNoAccount = httpapi.NotFound("no such social account")
)

// Account is the social account resource.
type Account struct {
	ID          string    `json:"id"`
	Platform    string    `json:"platform"`
	Name        string    `json:"name"`
	ExternalID  string    `json:"external_id"`
	Status      string    `json:"status"`
	ConnectedAt time.Time `json:"connected_at"`
}

// Account statuses.
const (
	AccountConnected = "connected"
	AccountExpired   = "expired"
	AccountRevoked   = "revoked"
)

const accountColumns = `id, platform, name, external_id, status, connected_at`

func scanAccount(row pgx.Row, extra ...any) (Account, error) {
	var a Account
	err := row.Scan(append([]any{&a.ID, &a.Platform, &a.Name, &a.ExternalID, &a.Status, &a.ConnectedAt}, extra...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, errNoAccount
	}
	a.ConnectedAt = a.ConnectedAt.UTC()
	return a, err
}

// queryAccounts runs a query of accounts (accountColumns).
func queryAccounts(ctx context.Context, tx tenant.Querier, sql string, args ...any) ([]Account, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Account, error) { return scanAccount(r) })
}

// listAccounts returns up to limit accounts after the cursor (an account
// id; empty on the first page), newest first.
func listAccounts(ctx context.Context, tx tenant.Querier, after string, limit int) (_ []Account, err error) {
	defer httpapi.Wrap(&err, "listAccounts")
	return queryAccounts(ctx, tx, `SELECT `+accountColumns+` FROM social_accounts WHERE ($1 = '' OR id < $1) ORDER BY id DESC LIMIT $2`, after, limit)
}

// accountsOf returns the project's accounts whose ids are in ids.
func accountsOf(ctx context.Context, tx pgx.Tx, ids []string) (_ map[string]Account, err error) {
	defer httpapi.Wrap(&err, "accountsOf")
	list, err := queryAccounts(ctx, tx, `SELECT `+accountColumns+` FROM social_accounts WHERE id = ANY($1)`, ids)
	out := make(map[string]Account, len(list))
	for _, a := range list {
		out[a.ID] = a
	}
	return out, err
}

// accountsOfPlatform returns the accounts of platform, oldest first,
// whatever their status.
func accountsOfPlatform(ctx context.Context, tx pgx.Tx, platform string) (_ []Account, err error) {
	defer httpapi.Wrap(&err, "accountsOfPlatform(%s)", platform)
	return queryAccounts(ctx, tx, `SELECT `+accountColumns+` FROM social_accounts WHERE platform = $1 ORDER BY id`, platform)
}

// lockAccount reads an account and its sealed token, locked until tx ends.
func lockAccount(ctx context.Context, tx pgx.Tx, accountID string) (_ Account, sealed []byte, err error) {
	defer httpapi.Wrap(&err, "lockAccount(%s)", accountID)
	a, err := scanAccount(tx.QueryRow(ctx, `SELECT `+accountColumns+`, token FROM social_accounts WHERE id = $1 FOR UPDATE`, accountID), &sealed)
	return a, sealed, err
}

// saveAccount stores an account with its sealed token, or reconnects the
// same platform account (same external id), keeping its id.
func saveAccount(ctx context.Context, tx pgx.Tx, platform, name, externalID string, sealed []byte) (_ Account, err error) {
	defer httpapi.Wrap(&err, "saveAccount(%s, %s)", platform, externalID)
	return scanAccount(tx.QueryRow(ctx, `INSERT INTO social_accounts (id, platform, name, external_id, token) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (platform, external_id) DO UPDATE SET name = EXCLUDED.name, token = EXCLUDED.token, status = 'connected',
			connected_at = now(), updated_at = now()
		RETURNING `+accountColumns, id.New("acc_"), platform, name, externalID, sealed))
}

// deleteAccount deletes an account and its tokens.
func deleteAccount(ctx context.Context, tx pgx.Tx, accountID string) (err error) {
	defer httpapi.Wrap(&err, "deleteAccount(%s)", accountID)
	tag, err := tx.Exec(ctx, `DELETE FROM social_accounts WHERE id = $1`, accountID)
	if err == nil && tag.RowsAffected() == 0 {
		return errNoAccount
	}
	return err
}

// setAccountToken stores an account's renewed sealed token.
func setAccountToken(ctx context.Context, tx pgx.Tx, accountID string, sealed []byte) (err error) {
	defer httpapi.Wrap(&err, "setAccountToken(%s)", accountID)
	_, err = tx.Exec(ctx, `UPDATE social_accounts SET token = $2, updated_at = now() WHERE id = $1`, accountID, sealed)
	return err
}

// expireAccount records that the platform refused to renew an account's
// authorization.
func expireAccount(ctx context.Context, tx pgx.Tx, accountID string) (err error) {
	defer httpapi.Wrap(&err, "expireAccount(%s)", accountID)
	_, err = tx.Exec(ctx, `UPDATE social_accounts SET status = 'expired', updated_at = now() WHERE id = $1`, accountID)
	return err
}

// revokeAccount records that the platform refused a connected account's
// token.
func revokeAccount(ctx context.Context, tx pgx.Tx, accountID string) (err error) {
	defer httpapi.Wrap(&err, "revokeAccount(%s)", accountID)
	_, err = tx.Exec(ctx, `UPDATE social_accounts SET status = 'revoked', updated_at = now() WHERE id = $1 AND status = 'connected'`, accountID)
	return err
}

// oauthState is the stored half of an OAuth flow.
type oauthState struct {
	verifier []byte // sealed PKCE verifier; nil without PKCE
	expires  time.Time
	used     *time.Time
}

// insertOAuthState stores the server's half of a new OAuth flow, and
// clears away the flows never finished, once long expired.
func insertOAuthState(ctx context.Context, tx pgx.Tx, st oauth.State, sealedVerifier []byte) (err error) {
	defer httpapi.Wrap(&err, "insertOAuthState")
	if _, err := tx.Exec(ctx, `DELETE FROM social_oauth_states WHERE expires_at < now() - interval '1 day'`); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO social_oauth_states (id, platform, verifier, expires_at) VALUES ($1, $2, $3, $4)`,
		st.ID, st.Platform, sealedVerifier, time.Unix(st.Expires, 0))
	return err
}

// lockOAuthState reads the stored half of a flow, locked until tx ends
// (ErrNotFound when it is not, or no longer, stored).
func lockOAuthState(ctx context.Context, tx pgx.Tx, st oauth.State) (_ oauthState, err error) {
	defer httpapi.Wrap(&err, "lockOAuthState")
	var o oauthState
	err = tx.QueryRow(ctx, `SELECT verifier, expires_at, used_at FROM social_oauth_states WHERE id = $1 AND platform = $2 FOR UPDATE`,
		st.ID, st.Platform).Scan(&o.verifier, &o.expires, &o.used)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, httpapi.ErrNotFound
	}
	return o, err
}

// useOAuthState marks a flow used and forgets its verifier.
func useOAuthState(ctx context.Context, tx pgx.Tx, stateID string) (err error) {
	defer httpapi.Wrap(&err, "useOAuthState(%s)", stateID)
	_, err = tx.Exec(ctx, `UPDATE social_oauth_states SET used_at = now(), verifier = NULL WHERE id = $1`, stateID)
	return err
}

// Post is the social post resource.
type Post struct {
	ID          int64      `json:"id"`
	Title       string     `json:"title"`
	Content     string     `json:"content"`
	Platforms   []string   `json:"platforms"`
	AccountIDs  []string   `json:"account_ids"`
	Media       []string   `json:"media"`
	Status      string     `json:"status"`
	ScheduledAt *time.Time `json:"scheduled_at"`
	PublishedAt *time.Time `json:"published_at"`
	Results     []Result   `json:"results"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// Result is the outcome of a post on one account of one platform.
type Result struct {
	Platform string `json:"platform"`
	// AccountID is the account published as (null when the platform had
	// no connected account).
	AccountID  *string `json:"account_id"`
	Status     string  `json:"status"`
	ExternalID *string `json:"external_id"`
	URL        *string `json:"url"`
	Error      *string `json:"error"`
}

// storedResult is a result as the results column keeps it, with its run.
type storedResult struct {
	Result
	Run int `json:"run"`
}

// Result statuses.
const (
	ResultPublished = "published"
	ResultFailed    = "failed"
)

const postColumns = `id, title, content, platforms, account_ids, media, status, scheduled_at, published_at, results, created_at, updated_at, publish_run`

// postRow is a social_posts row: the post (its Results unset), its
// results as the results column keeps them, each with its run, and the
// count of its publishes (the current one while publishing).
type postRow struct {
	Post
	results []storedResult
	run     int
}

// toPost is the post of a row, with its results as the API shows them.
func toPost(row postRow) Post {
	p := row.Post
	p.Results = make([]Result, len(row.results))
	for i, r := range row.results {
		p.Results[i] = r.Result
	}
	return p
}

func scanPost(row pgx.Row) (postRow, error) {
	var p postRow
	var results []byte
	err := row.Scan(&p.ID, &p.Title, &p.Content, &p.Platforms, &p.AccountIDs, &p.Media, &p.Status, &p.ScheduledAt, &p.PublishedAt, &results, &p.CreatedAt, &p.UpdatedAt, &p.run)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, errNoPost
	}
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(results, &p.results); err != nil {
		return p, err
	}
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	p.ScheduledAt, p.PublishedAt = utc(p.ScheduledAt), utc(p.PublishedAt)
	return p, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// getPost reads a post.
func getPost(ctx context.Context, tx tenant.Querier, id int64) (_ Post, err error) {
	defer httpapi.Wrap(&err, "getPost(%d)", id)
	row, err := getPostRow(ctx, tx, id, false)
	return toPost(row), err
}

// getPostRow reads a post's row; lock takes its row lock until tx ends.
func getPostRow(ctx context.Context, tx tenant.Querier, id int64, lock bool) (_ postRow, err error) {
	defer httpapi.Wrap(&err, "getPostRow(%d)", id)
	q := `SELECT ` + postColumns + ` FROM social_posts WHERE id = $1`
	if lock {
		q += ` FOR UPDATE`
	}
	return scanPost(tx.QueryRow(ctx, q, id))
}

// queryPosts runs a query of posts (postColumns).
func queryPosts(ctx context.Context, tx tenant.Querier, sql string, args ...any) ([]Post, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Post, error) {
		row, err := scanPost(r)
		return toPost(row), err
	})
}

// listPosts returns up to limit posts before the post id before (0: from
// the newest), newest first, of status when it is not empty.
func listPosts(ctx context.Context, tx tenant.Querier, status string, before int64, limit int) (_ []Post, err error) {
	defer httpapi.Wrap(&err, "listPosts(%s)", status)
	return queryPosts(ctx, tx, `SELECT `+postColumns+` FROM social_posts
		WHERE ($1 = '' OR status = $1) AND ($2 = 0 OR id < $2) ORDER BY id DESC LIMIT $3`, status, before, limit)
}

// insertPost stores p (its id and timestamps are set from the row).
func insertPost(ctx context.Context, tx pgx.Tx, p Post) (_ Post, err error) {
	defer httpapi.Wrap(&err, "insertPost")
	row, err := scanPost(tx.QueryRow(ctx, `INSERT INTO social_posts (title, content, platforms, account_ids, media, status, scheduled_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+postColumns,
		p.Title, p.Content, p.Platforms, p.AccountIDs, p.Media, p.Status, p.ScheduledAt))
	return toPost(row), err
}

// updatePost writes every field of p but its id and creation time, and
// returns the post as stored.
func updatePost(ctx context.Context, tx pgx.Tx, p postRow) (_ Post, err error) {
	defer httpapi.Wrap(&err, "updatePost")
	stored := p.results
	if stored == nil {
		stored = []storedResult{}
	}
	results, err := json.Marshal(stored)
	if err != nil {
		return Post{}, err
	}
	row, err := scanPost(tx.QueryRow(ctx, `UPDATE social_posts SET title = $2, content = $3, platforms = $4, account_ids = $5, media = $6,
		status = $7, scheduled_at = $8, published_at = $9, results = $10, publish_run = $11, updated_at = now() WHERE id = $1 RETURNING `+postColumns,
		p.ID, p.Title, p.Content, p.Platforms, p.AccountIDs, p.Media, p.Status, p.ScheduledAt, p.PublishedAt, results, p.run))
	return toPost(row), err
}

// deletePost deletes a post.
func deletePost(ctx context.Context, tx pgx.Tx, id int64) (err error) {
	defer httpapi.Wrap(&err, "deletePost(%d)", id)
	tag, err := tx.Exec(ctx, `DELETE FROM social_posts WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return errNoPost
	}
	return err
}

// claimScheduled makes the post with id publishing (a new run) if it is
// scheduled at at, and reports whether it did.
func claimScheduled(ctx context.Context, tx pgx.Tx, id int64, at time.Time) (_ bool, err error) {
	defer httpapi.Wrap(&err, "claimScheduled(%d)", id)
	tag, err := tx.Exec(ctx, `UPDATE social_posts SET status = 'publishing', publish_run = publish_run + 1, updated_at = now()
		WHERE id = $1 AND status = 'scheduled' AND scheduled_at = $2`, id, at)
	return tag.RowsAffected() == 1, err
}

// scheduledPostsSQL reads the id and scheduled time of every scheduled
// post, for their jobs (EnqueueScheduled).
const scheduledPostsSQL = `SELECT id, scheduled_at FROM social_posts WHERE status = 'scheduled' ORDER BY id`
