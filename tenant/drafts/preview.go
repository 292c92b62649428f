package drafts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// Preview links (docs/content-workflow.md): a token, shown once when the
// link is made (tenant/releases: POST /previews) and stored as its
// SHA-256, lets the public surface serve the drafts of the items it
// covers (a release's, or items of its own) to the requests that carry it
// (X-Preview-Token, or ?preview=) until it expires or is revoked. Those
// answers are private and never cached (httpapi.PublicBody).

// TokenPrefix starts every preview token.
const TokenPrefix = "pvt_"

// NewToken returns a new preview token and the hash stored for it.
func NewToken() (token string, hash []byte) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	h := sha256.Sum256([]byte(token))
	return token, h[:]
}

// Previewing is what a valid preview token covers; nil covers nothing.
type Previewing struct {
	items map[[2]string]bool
}

// Covers reports whether the preview covers the item typ ref.
func (p *Previewing) Covers(typ, ref string) bool {
	return p != nil && p.items[[2]string{typ, ref}]
}

var errBadToken = httpapi.Unauthorized("the preview token is not valid: unknown, expired or revoked")

// Preview reads the preview token of a public request: nil when it has
// none, a 401 when it is not one of the project's valid tokens now.
func Preview(r *http.Request, s *tenant.Scope) (*Previewing, error) {
	token := r.Header.Get(httpapi.PreviewHeader)
	if token == "" {
		token = r.URL.Query().Get("preview")
	}
	if token == "" {
		if httpapi.IsPreview(r) {
			return nil, errBadToken
		}
		return nil, nil
	}
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 100 {
		return nil, errBadToken
	}
	h := sha256.Sum256([]byte(token))
	var items []byte
	err := s.Reader().QueryRow(r.Context(), `SELECT CASE WHEN p.release_id IS NULL THEN p.items ELSE r.items END
		FROM previews p LEFT JOIN releases r ON r.id = p.release_id
		WHERE p.secret_hash = $1 AND p.expires_at > now() AND p.revoked_at IS NULL`, h[:]).Scan(&items)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errBadToken
	}
	if err != nil {
		return nil, err
	}
	var list []struct{ Type, ID string }
	if err := json.Unmarshal(items, &list); err != nil {
		return nil, err
	}
	p := &Previewing{items: make(map[[2]string]bool, len(list))}
	for _, it := range list {
		p.items[[2]string{it.Type, it.ID}] = true
	}
	return p, nil
}

// PreviewDraft loads into dst the draft of the item typ ref when p covers
// it and it has one.
func PreviewDraft(ctx context.Context, q tenant.Querier, p *Previewing, typ, ref string, dst any) (bool, error) {
	if !p.Covers(typ, ref) {
		return false, nil
	}
	return Load(ctx, q, typ, ref, dst)
}
