package forms

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// row is a form_submissions row.
type row struct {
	ID        int64
	Type      string
	Email     string
	Name      *string
	Subject   *string
	Message   *string
	Fields    []byte // JSON object
	Source    *string
	Spam      bool
	CreatedAt time.Time
}

const columns = `id, type, email, name, subject, message, fields, source, spam, created_at`

func scanRow(s pgx.Row) (row, error) {
	var r row
	err := s.Scan(&r.ID, &r.Type, &r.Email, &r.Name, &r.Subject, &r.Message, &r.Fields, &r.Source, &r.Spam, &r.CreatedAt)
	return r, err
}

// insertSQL stores a contact message or a spam submission of either type:
// each is its own row.
const insertSQL = `INSERT INTO form_submissions (type, email, name, subject, message, fields, source, spam)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING ` + columns

// subscribeSQL stores a genuine newsletter subscription: subscribing again
// with the same email (in any case) keeps the one row, its id and its date,
// and only fills in a name or source the new request gives.
const subscribeSQL = `INSERT INTO form_submissions AS f (type, email, name, source)
VALUES ('newsletter', $1, $2, $3)
ON CONFLICT (lower(email)) WHERE type = 'newsletter' AND NOT spam
DO UPDATE SET name = coalesce(EXCLUDED.name, f.name), source = coalesce(EXCLUDED.source, f.source)
RETURNING ` + columns

// insert stores a validated submission and returns the stored row.
func insert(ctx context.Context, tx pgx.Tx, in row) (_ row, err error) {
	defer httpapi.Wrap(&err, "insert")
	if in.Type == TypeNewsletter && !in.Spam {
		return scanRow(tx.QueryRow(ctx, subscribeSQL, in.Email, in.Name, in.Source))
	}
	return scanRow(tx.QueryRow(ctx, insertSQL, in.Type, in.Email, in.Name, in.Subject, in.Message, in.Fields, in.Source, in.Spam))
}

// listSQL pages newest first by id; an empty $1 means every type, $2 0 the
// first page.
const listSQL = `SELECT ` + columns + ` FROM form_submissions
WHERE ($1::text = '' OR type = $1) AND ($2::bigint = 0 OR id < $2)
ORDER BY id DESC LIMIT $3`

// list returns up to limit rows of typ ("" for all) older than the row
// with id before (0 for the newest).
func list(ctx context.Context, tx tenant.Querier, typ string, before int64, limit int) (_ []row, err error) {
	defer httpapi.Wrap(&err, "list")
	rows, err := tx.Query(ctx, listSQL, typ, before, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) { return scanRow(r) })
}

// remove deletes one submission; an absent one is httpapi.ErrNotFound.
func remove(ctx context.Context, tx pgx.Tx, id int64) (err error) {
	defer httpapi.Wrap(&err, "remove(%d)", id)
	tag, err := tx.Exec(ctx, `DELETE FROM form_submissions WHERE id = $1`, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return httpapi.ErrNotFound
	}
	return nil
}

// subscriber is one line of the newsletter export.
type subscriber struct {
	Email     string
	Name      string
	Source    string
	CreatedAt time.Time
}

// eachSubscriber calls fn for every genuine newsletter subscriber, newest
// first, streaming the rows.
func eachSubscriber(ctx context.Context, tx pgx.Tx, fn func(subscriber) error) (err error) {
	defer httpapi.Wrap(&err, "eachSubscriber")
	rows, err := tx.Query(ctx, `SELECT email, coalesce(name, ''), coalesce(source, ''), created_at
FROM form_submissions WHERE type = 'newsletter' AND NOT spam ORDER BY id DESC`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var sub subscriber
		if err := rows.Scan(&sub.Email, &sub.Name, &sub.Source, &sub.CreatedAt); err != nil {
			return err
		}
		if err := fn(sub); err != nil {
			return err
		}
	}
	return rows.Err()
}
