package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestMCPCommandNodeClient: the official TypeScript SDK
// (testdata/mcp-client/stdio.mjs) starts `plinth mcp` over stdio, as a
// desktop agent does, and calls generate_blog_post with onprogress. The
// SDK then sends a numeric progress token, which arrives in Go as a
// float64: the proxy must pass it on as received (the Go SDK's
// SetProgressToken panics on a float64, and that panic ended the
// process). The progress comes back under the token, increasing, and the
// answer is the completed job.
func TestMCPCommandNodeClient(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs node: not with -short")
	}
	dir := apitest.MCPClient(t, filepath.Join("..", ".."))
	srv := apitest.New(t, apitest.WithWorkers())
	p := srv.NewProject("build")

	// The client starts this test binary as plinth (runAsPlinthIfAsked):
	// `plinth mcp` as the command line runs it, through main.
	cmd := exec.Command("node", "stdio.mjs", os.Args[0], "mcp")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"PLINTH_TEST_MAIN=1", "PLINTH_URL=" + srv.URL, "PLINTH_API_KEY=" + p.Key}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "node stdio.mjs (stderr: the client's and plinth mcp's):\n%s", stderr.String())
	require.NotContains(t, stderr.String(), "panic")
	require.NotContains(t, stderr.String(), "DATA RACE")

	var got struct {
		Server struct{ Name string }
		Tools  int
		Token  struct {
			Type  string
			Value any
		}
		Progress []struct {
			Progress float64
			Message  string
		}
		IsError bool
		Job     map[string]any
		Text    string
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), "%s", stdout.String())
	require.Equal(t, "plinth", got.Server.Name)
	require.Positive(t, got.Tools)
	require.Equal(t, "number", got.Token.Type, "the SDK no longer sends a numeric token: this test no longer covers the float64 case")
	require.False(t, got.IsError, got.Text)
	require.Equal(t, "completed", got.Job["status"], "%v", got.Job)
	require.EqualValues(t, 100, got.Job["progress"])
	require.NotEmpty(t, got.Progress, "no progress notification came back under the numeric token")
	var values []float64
	for _, n := range got.Progress {
		values = append(values, n.Progress)
	}
	require.True(t, slices.IsSorted(values), "progress went back: %v", values)
	require.NotEmpty(t, got.Job["result"], "%v", got.Job)
}
