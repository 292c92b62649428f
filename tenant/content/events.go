package content

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"

	"github.com/plinth-dev/plinth/internal/ssrf"
)

// Topics this pillar emits.
const (
	TopicChanged   = "content.changed"
	TopicGenerated = "image.generated"
)

// GuardedFetch returns the Fetch of URL swaps: the URL is checked by the
// SSRF guard (https only, no private, loopback, link-local or reserved
// address, loopback and http allowed in dev mode), checked again when the
// connection is made, and redirects are not followed. Errors are worded
// for the user.
func GuardedFetch(dev bool, roots *x509.CertPool) func(ctx context.Context, rawURL string) (*http.Response, error) {
	client := ssrf.NewClient(ssrf.Options{Dev: dev, Timeout: fetchTimeout, RootCAs: roots})
	return func(ctx context.Context, rawURL string) (*http.Response, error) {
		u, err := ssrf.CheckURL(ctx, rawURL, dev, nil)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, errors.New("must be an absolute URL")
		}
		req.Header.Set("Accept", "image/*")
		req.Header.Set("User-Agent", "Plinth-Images/1.0")
		res, err := client.Do(req)
		switch {
		case errors.Is(err, ssrf.ErrBlocked):
			return nil, errors.New("must not point to a private, loopback, link-local or reserved address")
		case err != nil:
			return nil, errors.New("could not be fetched (the connection failed or timed out)")
		}
		return res, nil
	}
}
