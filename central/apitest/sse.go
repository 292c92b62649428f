package apitest

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"
)

// JobSteps follows a job's SSE stream from its first event (Last-Event-ID
// 0) to done, and checks what a client watching it sees: each step of
// want activated, then completed, in order; progress that never goes back
// and ends at 100; no error event. It returns the job of the done event.
func (e *Env) JobSteps(t *testing.T, key, jobID string, want []string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", e.URL+"/v1/jobs/"+jobID+"/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Last-Event-ID", "0")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))

	var activated, completed []string
	var progress []float64
	var done map[string]any
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			break
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(ev.Data), &m), ev.Data)
		switch ev.Type {
		case "step":
			if m["active"] == true {
				activated = append(activated, m["name"].(string))
			}
			if m["completed"] == true {
				completed = append(completed, m["name"].(string))
			}
		case "progress":
			progress = append(progress, m["progress"].(float64))
		case "done":
			done = m
		case "error":
			t.Fatalf("error event: %s", ev.Data)
		}
		if done != nil {
			break
		}
	}
	require.Equal(t, want, activated, "steps activated")
	require.Equal(t, want, completed, "steps completed")
	require.NotNil(t, done, "the stream ends with done")
	for i := 1; i < len(progress); i++ {
		require.GreaterOrEqual(t, progress[i], progress[i-1], "progress never goes back: %v", progress)
	}
	require.NotEmpty(t, progress, "progress events")
	require.Equal(t, float64(100), progress[len(progress)-1])
	return done
}
