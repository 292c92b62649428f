package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/webhooks/signature"
)

// TestListenForwards runs plinth listen against a server, forwarding to
// a receiver on this machine (loopback, which the server's own
// deliveries refuse outside dev mode): a write through the API reaches
// the receiver as a delivery signed with the secret the Ready line
// printed, the command prints a line for it, and when it is interrupted
// it deletes its listener and exits 0.
func TestListenForwards(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t, apitest.WithWorkers())
	p := srv.NewProject("build")
	type request struct {
		header http.Header
		body   []byte
	}
	received := make(chan request, 8)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- request{r.Header.Clone(), body}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"listen", "--forward-to", rc.URL + "/webhooks", "--events", "content.changed,order.paid"},
			envOf(map[string]string{"PLINTH_URL": srv.URL, "PLINTH_API_KEY": p.Key}), &out, &errs)
	}()
	ready := regexp.MustCompile(`Ready\. Forwarding content\.changed,order\.paid to ` + regexp.QuoteMeta(rc.URL) + `/webhooks\. Signing secret: (whsec_\w+)\n`)
	var secret string
	waitFor(t, "the Ready line", 30*time.Second, func() bool {
		select {
		case err := <-done:
			t.Fatalf("plinth listen returned before Ready: %v\n%s", err, errs.String())
		default:
		}
		if m := ready.FindStringSubmatch(out.String()); m != nil {
			secret = m[1]
		}
		return secret != ""
	})
	list := srv.Do("GET", "/v1/webhook-endpoints", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, "listen", list[0].(map[string]any)["mode"])

	srv.Do("PUT", "/v1/content/hero.title", p.Key, map[string]any{"value": "From the API"}).Expect(t, 200)
	var got request
	select {
	case got = <-received:
	case <-time.After(30 * time.Second):
		t.Fatalf("the receiver got nothing\nstdout:\n%s\nstderr:\n%s", out.String(), errs.String())
	}
	require.NoError(t, signature.Verify(secret, got.header.Get("X-Service-Signature"), got.body, time.Now()))
	require.Equal(t, "content.changed", got.header.Get("X-Service-Event"))
	require.Equal(t, "application/json", got.header.Get("Content-Type"))
	require.Equal(t, "Service-Webhooks/1.0", got.header.Get("User-Agent"))
	delivery := got.header.Get("X-Service-Delivery")
	var envelope struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(got.body, &envelope))
	require.Equal(t, "content.changed", envelope.Type)
	line := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d content\.changed ` + regexp.QuoteMeta(delivery) + ` -> 204$`)
	waitFor(t, "the line of the delivery", 10*time.Second, func() bool { return line.MatchString(out.String()) })

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, errs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("plinth listen did not stop within 30 s of its interruption")
	}
	list = srv.Do("GET", "/v1/webhook-endpoints", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)
	require.Empty(t, list, "the listener endpoint is deleted")
}

// TestListenRefuses: plinth listen says what it needs before it creates
// anything: the server and key, and a receiver it can POST to.
func TestListenRefuses(t *testing.T) {
	t.Parallel()
	_, _, err := cli(t, nil, "listen", "--forward-to", "http://localhost:3000/webhooks")
	require.ErrorContains(t, err, "PLINTH_URL and PLINTH_API_KEY are required")
	env := map[string]string{"PLINTH_URL": "http://127.0.0.1:1", "PLINTH_API_KEY": "pln_test_x"}
	for _, to := range []string{"ftp://localhost/webhooks", "file:///tmp/hook", "localhost:3000/webhooks"} {
		_, _, err := cli(t, env, "listen", "--forward-to", to)
		require.ErrorContains(t, err, "--forward-to", to)
	}
	_, _, err = cli(t, env, "listen")
	require.ErrorContains(t, err, "--forward-to")
}
