// Package webhooks serves /v1/webhook-endpoints: the endpoints a project's
// events are delivered to, their signing secrets, their deliveries and
// redelivery, and the stream of a listener (plinth listen). Delivery
// itself is tenant/outbox.
package webhooks

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/internal/ssrf"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/idempotency"
	"github.com/plinth-dev/plinth/tenant/jobs"
	"github.com/plinth-dev/plinth/tenant/outbox"
)

// RotationWindow is how long a replaced signing secret keeps signing.
const RotationWindow = 24 * time.Hour

// maxURL bounds an endpoint URL.
const maxURL = 2048

// Deps is what the pillar is built with.
type Deps struct {
	Outbox  *outbox.Outbox
	Secrets *outbox.Secrets
	// Dev allows http:// and loopback URLs (PLINTH_DEV=1).
	Dev bool
	// Hub wakes a listener's streams when a delivery is handed to it on
	// any instance: the jobs hub, listening to outbox.ListenChannel.
	Hub *jobs.Hub
}

// Service is the webhooks pillar: the endpoints a project subscribes and
// their deliveries (tenant/outbox delivers them).
type Service struct {
	tenant.Base
	outbox    *outbox.Outbox
	secrets   *outbox.Secrets
	dev       bool
	hub       *jobs.Hub
	listeners *jobs.StreamSlots
}

// New builds the pillar.
func New(d Deps) *Service {
	return &Service{outbox: d.Outbox, secrets: d.Secrets, dev: d.Dev, hub: d.Hub, listeners: jobs.NewStreamSlots(MaxListenStreamsPerProject)}
}

// Routes mounts /webhook-endpoints: webhooks:read for GET, webhooks:write
// else, and for a listener's stream, a GET that hands out signed bodies.
func (h *Service) Routes(r chi.Router) {
	r.Route("/webhook-endpoints", func(r chi.Router) {
		r.With(tenant.RequireScope("webhooks:write")).Get("/{id}/listen", tenant.Handle(h.listen))
		r.Group(func(r chi.Router) {
			r.Use(tenant.ReadWrite("webhooks"))
			r.Get("/", tenant.Handle(h.list))
			r.Post("/", tenant.Handle(h.create))
			r.Get("/{id}", tenant.Handle(h.get))
			r.Patch("/{id}", tenant.Handle(h.update))
			r.Delete("/{id}", tenant.Handle(h.delete))
			r.Post("/{id}/rotate-secret", tenant.Handle(h.rotate))
			r.Get("/{id}/deliveries", tenant.Handle(h.deliveries))
			r.Post("/{id}/deliveries/{delivery_id}/redeliver", tenant.Handle(h.redeliver))
		})
	})
}

// Endpoint is the webhook endpoint resource. A listener (Mode listen) has
// no URL: its deliveries go to the stream plinth listen holds.
type Endpoint struct {
	ID                 string    `json:"id"`
	URL                *string   `json:"url"`
	Mode               string    `json:"mode"`
	Events             []string  `json:"events"`
	IsActive           bool      `json:"is_active"`
	SigningSecret      string    `json:"signing_secret,omitempty"`
	CreatedAt          time.Time `json:"created_at"`
	LastDeliveryStatus string    `json:"last_delivery_status"`
}

// Target names where the endpoint's deliveries go, for people: its URL,
// or the listener.
func (e Endpoint) Target() string {
	if e.URL == nil {
		return "listener (plinth listen)"
	}
	return *e.URL
}

// Delivery is the delivery record resource.
type Delivery struct {
	ID             string     `json:"id"`
	EventID        string     `json:"event_id"`
	EventType      string     `json:"event_type"`
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	LastStatusCode *int       `json:"last_status_code"`
	LastError      *string    `json:"last_error"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
	CreatedAt      time.Time  `json:"created_at"`
}

// endpointID returns the path's endpoint id; a malformed one is unknown.
func endpointID(r *http.Request, param string) (string, error) {
	v := chi.URLParam(r, param)
	if !id.Valid("whe_", v) {
		return "", httpapi.ErrNotFound
	}
	return v, nil
}

type createRequest struct {
	// URL is required of an http endpoint and absent from a listener.
	URL      *string  `json:"url"`
	Mode     *string  `json:"mode"`
	Events   []string `json:"events" required:"true"`
	IsActive *bool    `json:"is_active"`
}

type updateRequest struct {
	URL      *string   `json:"url"`
	Events   *[]string `json:"events"`
	IsActive *bool     `json:"is_active"`
}

// withSecret answers with e and its new signing secret, which is shown
// this once: it is never stored, not even for an idempotent replay.
func withSecret(w http.ResponseWriter, r *http.Request, status int, e Endpoint, secret string) error {
	e.SigningSecret = secret
	idempotency.OmitFromReplay(r.Context(), "signing_secret")
	return httpapi.JSON(w, status, e)
}

// checkURL validates an endpoint URL: https (http and loopback in dev
// mode) and, through the SSRF rules, no host that is or resolves to a
// private, loopback, link-local or reserved address.
func (h *Service) checkURL(ctx context.Context, v *httpapi.Validator, raw string) {
	if len(raw) > maxURL {
		v.Check(false, "url", "must be at most 2048 characters")
		return
	}
	if _, err := ssrf.CheckURL(ctx, raw, h.dev, nil); err != nil {
		v.Check(false, "url", err.Error())
	}
}

// checkEvents validates a topic list and returns it without duplicates.
func checkEvents(v *httpapi.Validator, events []string) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		if !outbox.ValidTopic(e) {
			v.Check(false, "events", "unknown topic "+e)
			continue
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	v.Check(len(events) > 0, "events", "must name at least one topic")
	return out
}

func (h *Service) create(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req createRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	var v httpapi.Validator
	mode := outbox.ModeHTTP
	if req.Mode != nil {
		mode = *req.Mode
	}
	switch mode {
	case outbox.ModeHTTP:
		if req.URL == nil {
			return httpapi.BadRequest(`missing required field "url" (an endpoint of mode http needs one)`)
		}
		h.checkURL(r.Context(), &v, *req.URL)
	case outbox.ModeListen:
		v.Check(req.URL == nil, "url", "must be absent: a listen endpoint has no URL (plinth listen forwards its deliveries)")
	default:
		v.Check(false, "mode", "must be http or listen")
	}
	events := checkEvents(&v, req.Events)
	if err := v.Err(); err != nil {
		return err
	}
	active := req.IsActive == nil || *req.IsActive
	eid := id.New("whe_")
	secret := outbox.NewSigningSecret()
	sealed := h.secrets.Seal(eid, secret)
	e, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Endpoint, error) {
		return insertEndpoint(r.Context(), tx, eid, mode, req.URL, events, active, sealed)
	})
	if err != nil {
		return err
	}
	return withSecret(w, r, http.StatusCreated, e, secret)
}

func (h *Service) list(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	list, err := httpapi.ListOf(r, httpapi.CursorText, func(after string, limit int) ([]Endpoint, error) {
		return listEndpoints(r.Context(), s.Reader(), after, limit)
	}, func(e Endpoint) string { return e.ID })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

func (h *Service) get(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	eid, err := endpointID(r, "id")
	if err != nil {
		return err
	}
	e, err := getEndpoint(r.Context(), s.Reader(), eid)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, e)
}

func (h *Service) update(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	eid, err := endpointID(r, "id")
	if err != nil {
		return err
	}
	var req updateRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	var v httpapi.Validator
	if req.URL != nil {
		h.checkURL(r.Context(), &v, *req.URL)
	}
	var events []string
	if req.Events != nil {
		events = checkEvents(&v, *req.Events)
	}
	if err := v.Err(); err != nil {
		return err
	}
	e, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Endpoint, error) {
		if req.URL != nil {
			cur, err := getEndpoint(r.Context(), tx, eid)
			if err != nil {
				return Endpoint{}, err
			}
			if cur.Mode == outbox.ModeListen {
				return Endpoint{}, httpapi.Invalid("url", "a listen endpoint has no URL: create an endpoint of mode http for one")
			}
		}
		return updateEndpoint(r.Context(), tx, eid, req.URL, events, req.IsActive)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, e)
}

func (h *Service) delete(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	eid, err := endpointID(r, "id")
	if err != nil {
		return err
	}
	if err := s.Tx(r.Context(), func(tx pgx.Tx) error { return deleteEndpoint(r.Context(), tx, eid) }); err != nil {
		return err
	}
	return httpapi.NoContent(w)
}

// rotate replaces the signing secret; the replaced one keeps signing for
// RotationWindow (a second v1 entry), a secret replaced before that is
// dropped at once.
func (h *Service) rotate(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	eid, err := endpointID(r, "id")
	if err != nil {
		return err
	}
	secret := outbox.NewSigningSecret()
	sealed := h.secrets.Seal(eid, secret)
	e, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Endpoint, error) { return rotateSecret(r.Context(), tx, eid, sealed) })
	if err != nil {
		return err
	}
	return withSecret(w, r, http.StatusOK, e, secret)
}

var deliveryStatuses = []string{"pending", "succeeded", "failed"}

func (h *Service) deliveries(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	eid, err := endpointID(r, "id")
	if err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	list, err := httpapi.ListOf(r, httpapi.CursorText, func(after string, limit int) ([]Delivery, error) {
		if status != "" && !slices.Contains(deliveryStatuses, status) {
			return nil, httpapi.Invalid("status", "must be pending, succeeded or failed")
		}
		return listDeliveries(r.Context(), s.Reader(), eid, status, after, limit)
	}, func(d Delivery) string { return d.ID })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

// redeliver sends the original envelope again as a new delivery: 202 with
// the new delivery record.
func (h *Service) redeliver(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	eid, err := endpointID(r, "id")
	if err != nil {
		return err
	}
	did := chi.URLParam(r, "delivery_id")
	if !id.Valid("whd_", did) {
		return httpapi.ErrNotFound
	}
	d, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Delivery, error) {
		nid, err := h.outbox.Redeliver(r.Context(), tx, s, eid, did)
		if err != nil {
			return Delivery{}, err
		}
		return getDelivery(r.Context(), tx, nid)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusAccepted, d)
}
