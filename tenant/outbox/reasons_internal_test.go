package outbox

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/internal/ssrf"
)

// TestTransportReason: the errors a delivery's client really returns map
// to their reason, and the reason never carries the error's text.
func TestTransportReason(t *testing.T) {
	t.Parallel()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	untrusted := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(untrusted.Close)
	// A listener that answers the handshake with bytes that are not TLS.
	garbage, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { garbage.Close() })
	go func() {
		for {
			c, err := garbage.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
			c.Close()
		}
	}()

	// Only the slow server's case waits for the timeout; the others are
	// answered at once, and get time enough to be on a loaded machine (a
	// handshake cut by a short timeout reads as a timeout, not a TLS error).
	short := ssrf.NewClient(ssrf.Options{Dev: true, Timeout: 200 * time.Millisecond})
	dev := ssrf.NewClient(ssrf.Options{Dev: true, Timeout: 10 * time.Second})
	guarded := ssrf.NewClient(ssrf.Options{Timeout: time.Second})
	cases := []struct {
		name   string
		client *http.Client
		url    string
		want   string
	}{
		{"no answer in time", short, slow.URL, ReasonTimeout},
		{"untrusted certificate", dev, untrusted.URL, ReasonTLS},
		{"not TLS", dev, "https://" + garbage.Addr().String(), ReasonTLS},
		{"loopback outside dev mode", guarded, untrusted.URL, ReasonBlocked},
		{"unresolvable", dev, "https://plinth-nowhere.invalid/", ReasonDNS},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, c.url, nil)
			_, err := c.client.Do(req)
			if err == nil {
				t.Fatal("the request succeeded")
			}
			if got := transportReason(err); got != c.want {
				t.Fatalf("transportReason(%v) = %q, want %q", err, got, c.want)
			}
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if got := transportReason(ctx.Err()); got != ReasonTimeout {
		t.Fatalf("a passed deadline: %q", got)
	}
	if got := statusReason(503); got != "http_status 503" {
		t.Fatalf("statusReason(503) = %q", got)
	}
}

// TestClosedIdleIsReset: a receiver that closes a pooled connection is
// cut off, as far as the endpoint's owner is concerned: net/http reports
// it with an unexported sentinel, which must not read as "other".
func TestClosedIdleIsReset(t *testing.T) {
	err := &url.Error{Op: "Post", URL: "http://192.0.2.1/hook", Err: errors.New("http: server closed idle connection")}
	if got := transportReason(err); got != ReasonReset {
		t.Fatalf("transportReason(%v) = %q, want %q", err, got, ReasonReset)
	}
}
