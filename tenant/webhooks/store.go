package webhooks

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

const endpointColumns = `id, url, mode, events, is_active, created_at, last_delivery_status`

func scanEndpoint(row pgx.Row) (Endpoint, error) {
	var e Endpoint
	err := row.Scan(&e.ID, &e.URL, &e.Mode, &e.Events, &e.IsActive, &e.CreatedAt, &e.LastDeliveryStatus)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, httpapi.ErrNotFound
	}
	e.CreatedAt = e.CreatedAt.UTC()
	return e, err
}

// insertEndpoint stores a new endpoint of mode with its sealed signing
// secret; url is nil for a listener.
func insertEndpoint(ctx context.Context, tx pgx.Tx, id, mode string, url *string, events []string, active bool, sealedSecret []byte) (_ Endpoint, err error) {
	defer httpapi.Wrap(&err, "insertEndpoint(%s)", id)
	return scanEndpoint(tx.QueryRow(ctx, `INSERT INTO webhook_endpoints (id, mode, url, events, is_active, secret)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+endpointColumns, id, mode, url, events, active, sealedSecret))
}

// listEndpoints returns up to limit endpoints older than the endpoint id
// after (empty: from the newest), newest first.
func listEndpoints(ctx context.Context, tx tenant.Querier, after string, limit int) (_ []Endpoint, err error) {
	defer httpapi.Wrap(&err, "listEndpoints")
	rows, err := tx.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE $1 = '' OR id < $1 ORDER BY id DESC LIMIT $2`, after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Endpoint, error) { return scanEndpoint(row) })
}

// getEndpoint reads an endpoint.
func getEndpoint(ctx context.Context, tx tenant.Querier, id string) (_ Endpoint, err error) {
	defer httpapi.Wrap(&err, "getEndpoint(%s)", id)
	return scanEndpoint(tx.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE id = $1`, id))
}

// updateEndpoint changes the fields of an endpoint that are not nil.
func updateEndpoint(ctx context.Context, tx pgx.Tx, id string, url *string, events []string, active *bool) (_ Endpoint, err error) {
	defer httpapi.Wrap(&err, "updateEndpoint(%s)", id)
	return scanEndpoint(tx.QueryRow(ctx, `UPDATE webhook_endpoints SET
			url = COALESCE($2, url), events = COALESCE($3, events), is_active = COALESCE($4, is_active), updated_at = now()
		WHERE id = $1 RETURNING `+endpointColumns, id, url, events, active))
}

// rotateSecret makes sealedSecret the endpoint's signing secret; the
// replaced one keeps signing for RotationWindow.
func rotateSecret(ctx context.Context, tx pgx.Tx, id string, sealedSecret []byte) (_ Endpoint, err error) {
	defer httpapi.Wrap(&err, "rotateSecret(%s)", id)
	return scanEndpoint(tx.QueryRow(ctx, `UPDATE webhook_endpoints SET
			previous_secret = secret, previous_until = now() + $3::interval, secret = $2, updated_at = now()
		WHERE id = $1 RETURNING `+endpointColumns, id, sealedSecret, RotationWindow))
}

// deleteEndpoint deletes an endpoint and, by cascade, its deliveries.
func deleteEndpoint(ctx context.Context, tx pgx.Tx, id string) (err error) {
	defer httpapi.Wrap(&err, "deleteEndpoint(%s)", id)
	// Lock the deliveries before the endpoint, in the order a delivery
	// worker takes them, so the cascade cannot deadlock with one.
	if _, err := tx.Exec(ctx, `SELECT FROM webhook_deliveries WHERE endpoint_id = $1 FOR UPDATE`, id); err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return httpapi.ErrNotFound
	}
	return err
}

const deliveryColumns = `d.id, d.event_id, e.type, d.status, d.attempts, d.last_status_code, d.last_error, d.next_attempt_at, d.created_at`

// selectDeliveries reads the deliveryColumns of deliveries, to be
// followed by a WHERE clause.
const selectDeliveries = `SELECT ` + deliveryColumns + ` FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id`

func scanDelivery(row pgx.Row) (Delivery, error) {
	var d Delivery
	err := row.Scan(&d.ID, &d.EventID, &d.EventType, &d.Status, &d.Attempts, &d.LastStatusCode, &d.LastError, &d.NextAttemptAt, &d.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, httpapi.ErrNotFound
	}
	d.CreatedAt = d.CreatedAt.UTC()
	if d.NextAttemptAt != nil {
		t := d.NextAttemptAt.UTC()
		d.NextAttemptAt = &t
	}
	return d, err
}

// listDeliveries returns up to limit deliveries of the endpoint (which
// must exist) older than the delivery id after (empty: from the newest),
// newest first, of status when it is not empty.
func listDeliveries(ctx context.Context, tx tenant.Querier, endpointID, status, after string, limit int) (_ []Delivery, err error) {
	defer httpapi.Wrap(&err, "listDeliveries(%s, %s)", endpointID, status)
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $1)`, endpointID).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, httpapi.ErrNotFound
	}
	rows, err := tx.Query(ctx, selectDeliveries+`
		WHERE d.endpoint_id = $1 AND ($2 = '' OR d.id < $2) AND ($3 = '' OR d.status = $3)
		ORDER BY d.id DESC LIMIT $4`, endpointID, after, status, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Delivery, error) { return scanDelivery(row) })
}

// getDelivery reads a delivery.
func getDelivery(ctx context.Context, tx pgx.Tx, id string) (_ Delivery, err error) {
	defer httpapi.Wrap(&err, "getDelivery(%s)", id)
	return scanDelivery(tx.QueryRow(ctx, selectDeliveries+` WHERE d.id = $1`, id))
}
