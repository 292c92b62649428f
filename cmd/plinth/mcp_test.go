package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestMCPCommand runs plinth mcp over pipes as an MCP client would start
// it, against a server: the tools are listed, a write and a read go
// through to the project, and a read-only key is refused by the server.
func TestMCPCommand(t *testing.T) {
	t.Parallel()
	srv := apitest.New(t)
	p := srv.NewProject("build")
	start := func(key string) *sdk.ClientSession {
		inR, inW := io.Pipe()   // the client writes the command's stdin
		outR, outW := io.Pipe() // the command writes the client's input
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		var stderr syncBuffer
		go func() {
			e := &env{ctx: ctx, getenv: envOf(map[string]string{"PLINTH_URL": srv.URL, "PLINTH_API_KEY": key}), stdin: inR, stdout: outW, stderr: &stderr}
			done <- (&mcpCmd{}).Run(e)
			_ = outW.Close()
		}()
		client := sdk.NewClient(&sdk.Implementation{Name: "plinth-test", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
		require.NoError(t, err, stderr.String())
		t.Cleanup(func() {
			_ = cs.Close()
			cancel()
			<-done
		})
		return cs
	}

	cs := start(p.Key)
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		require.Equal(t, "object", tool.InputSchema.(map[string]any)["type"])
	}
	require.Contains(t, names, "set_content")
	require.Len(t, names, 37)

	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "set_content",
		Arguments: map[string]any{"key": "hero.title", "value": "From a local agent"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	got := srv.Do("GET", "/v1/content/hero.title", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "From a local agent", got["value"])

	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_content", Arguments: map[string]any{"key": "hero.title"}})
	require.NoError(t, err)
	require.Equal(t, "From a local agent", res.StructuredContent.(map[string]any)["value"])

	doc, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "plinth://docs/mcp"})
	require.NoError(t, err)
	require.Contains(t, doc.Contents[0].Text, "plinth mcp")

	ro := start(p.NewKey(false, "content:read"))
	res, err = ro.CallTool(context.Background(), &sdk.CallToolParams{Name: "set_content",
		Arguments: map[string]any{"key": "hero.title", "value": "No"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	var text strings.Builder
	for _, c := range res.Content {
		text.WriteString(c.(*sdk.TextContent).Text)
	}
	require.Contains(t, text.String(), "content:write")
}

// TestMCPCommandNeedsServer: without PLINTH_URL and PLINTH_API_KEY the
// command says what it needs instead of waiting on stdin.
func TestMCPCommandNeedsServer(t *testing.T) {
	t.Parallel()
	var stdout bytes.Buffer
	err := (&mcpCmd{}).Run(&env{ctx: context.Background(), getenv: envOf(nil), stdin: strings.NewReader(""), stdout: &stdout, stderr: io.Discard})
	require.ErrorContains(t, err, "PLINTH_URL and PLINTH_API_KEY are required")
	require.Zero(t, stdout.Len())
	out, _, err := cli(t, nil, "help")
	require.NoError(t, err)
	require.Contains(t, out, "mcp")
}
