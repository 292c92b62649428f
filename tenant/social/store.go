package social

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
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
		return a, httpapi.ErrNotFound
	}
	a.ConnectedAt = a.ConnectedAt.UTC()
	return a, err
}

// listAccounts returns up to limit+1 accounts after the cursor (an
// account id), newest first.
func listAccounts(ctx context.Context, tx pgx.Tx, cursor string, limit int) ([]Account, error) {
	rows, err := tx.Query(ctx, `SELECT `+accountColumns+` FROM social_accounts WHERE ($1 = '' OR id < $1) ORDER BY id DESC LIMIT $2`, cursor, limit+1)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Account, error) { return scanAccount(r) })
}

// accountsOf returns the project's accounts whose ids are in ids.
func accountsOf(ctx context.Context, tx pgx.Tx, ids []string) (map[string]Account, error) {
	rows, err := tx.Query(ctx, `SELECT `+accountColumns+` FROM social_accounts WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Account, error) { return scanAccount(r) })
	out := make(map[string]Account, len(list))
	for _, a := range list {
		out[a.ID] = a
	}
	return out, err
}

// accountsOfPlatform returns the accounts of platform, oldest first,
// whatever their status.
func accountsOfPlatform(ctx context.Context, tx pgx.Tx, platform string) ([]Account, error) {
	rows, err := tx.Query(ctx, `SELECT `+accountColumns+` FROM social_accounts WHERE platform = $1 ORDER BY id`, platform)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Account, error) { return scanAccount(r) })
}

// lockAccount reads an account and its sealed token, locked until tx ends.
func lockAccount(ctx context.Context, tx pgx.Tx, accountID string) (Account, []byte, error) {
	var sealed []byte
	a, err := scanAccount(tx.QueryRow(ctx, `SELECT `+accountColumns+`, token FROM social_accounts WHERE id = $1 FOR UPDATE`, accountID), &sealed)
	return a, sealed, err
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

	// run counts the post's publishes (the current one while publishing).
	run int
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

	// run is the publish the result came from (Post.run).
	run int
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

func scanPost(row pgx.Row) (Post, error) {
	var p Post
	var results []byte
	err := row.Scan(&p.ID, &p.Title, &p.Content, &p.Platforms, &p.AccountIDs, &p.Media, &p.Status, &p.ScheduledAt, &p.PublishedAt, &results, &p.CreatedAt, &p.UpdatedAt, &p.run)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, httpapi.ErrNotFound
	}
	if err != nil {
		return p, err
	}
	var stored []storedResult
	if err := json.Unmarshal(results, &stored); err != nil {
		return p, err
	}
	p.Results = make([]Result, len(stored))
	for i, r := range stored {
		p.Results[i] = r.Result
		p.Results[i].run = r.Run
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

// getPost reads a post; lock takes its row lock until tx ends.
func getPost(ctx context.Context, tx pgx.Tx, id int64, lock bool) (Post, error) {
	q := `SELECT ` + postColumns + ` FROM social_posts WHERE id = $1`
	if lock {
		q += ` FOR UPDATE`
	}
	return scanPost(tx.QueryRow(ctx, q, id))
}

// listPosts returns up to limit+1 posts after the cursor (a post id),
// newest first, of status when it is not empty.
func listPosts(ctx context.Context, tx pgx.Tx, status, cursor string, limit int) ([]Post, error) {
	after, err := httpapi.CursorID(cursor)
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `SELECT `+postColumns+` FROM social_posts
		WHERE ($1 = '' OR status = $1) AND ($2 = 0 OR id < $2) ORDER BY id DESC LIMIT $3`, status, after, limit+1)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Post, error) { return scanPost(r) })
}

// insertPost stores p (its id and timestamps are set from the row).
func insertPost(ctx context.Context, tx pgx.Tx, p Post) (Post, error) {
	return scanPost(tx.QueryRow(ctx, `INSERT INTO social_posts (title, content, platforms, account_ids, media, status, scheduled_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+postColumns,
		p.Title, p.Content, p.Platforms, p.AccountIDs, p.Media, p.Status, p.ScheduledAt))
}

// updatePost writes every field of p but its id and creation time.
func updatePost(ctx context.Context, tx pgx.Tx, p Post) (Post, error) {
	stored := make([]storedResult, len(p.Results))
	for i, r := range p.Results {
		stored[i] = storedResult{Result: r, Run: r.run}
	}
	results, err := json.Marshal(stored)
	if err != nil {
		return p, err
	}
	return scanPost(tx.QueryRow(ctx, `UPDATE social_posts SET title = $2, content = $3, platforms = $4, account_ids = $5, media = $6,
		status = $7, scheduled_at = $8, published_at = $9, results = $10, publish_run = $11, updated_at = now() WHERE id = $1 RETURNING `+postColumns,
		p.ID, p.Title, p.Content, p.Platforms, p.AccountIDs, p.Media, p.Status, p.ScheduledAt, p.PublishedAt, results, p.run))
}

func deletePost(ctx context.Context, tx pgx.Tx, id int64) error {
	tag, err := tx.Exec(ctx, `DELETE FROM social_posts WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return httpapi.ErrNotFound
	}
	return err
}
