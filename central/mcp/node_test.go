package mcp_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestNodeClient: a second, independent client, the TypeScript SDK
// (testdata/mcp-client, pinned by its package-lock.json), lists the
// tools and calls get_content over Streamable HTTP; it validates the
// answer against the tool's output schema. Its set_content with flat
// arguments writes the value; without value it is a tool error naming it.
func TestNodeClient(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs node: not with -short")
	}
	dir := apitest.MCPClient(t, filepath.Join("..", ".."))
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("PUT", "/v1/content/hero.title", p.Key, map[string]any{"value": "Hello from Go"}).Expect(t, 200)

	cmd := exec.Command("node", filepath.Join(dir, "client.mjs"), env.URL, p.Key, "hero.title")
	cmd.Dir = dir
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("node client: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var got struct {
		Server struct{ Name string }
		Tools  []struct {
			Name, InputType, OutputType string
			Annotations                 map[string]any
		}
		Content map[string]any
		IsError bool
		Missing struct {
			IsError bool
			Text    string
		}
		Set struct {
			IsError bool
			Content map[string]any
		}
		Invalid struct {
			IsError bool
			Text    string
		}
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Equal(t, "plinth", got.Server.Name)
	var names []string
	for _, tool := range got.Tools {
		names = append(names, tool.Name)
		require.Equal(t, "object", tool.InputType, tool.Name)
		require.Equal(t, "object", tool.OutputType, tool.Name)
	}
	require.ElementsMatch(t, toolNames, names)
	require.False(t, got.IsError)
	require.Equal(t, "Hello from Go", got.Content["value"])
	require.Equal(t, "hero.title", got.Content["key"])
	require.True(t, got.Missing.IsError)
	require.Contains(t, got.Missing.Text, "404")
	require.False(t, got.Set.IsError, "%v", got.Set)
	require.Equal(t, "Set from Node", got.Set.Content["value"])
	require.Equal(t, "Set from Node", env.Do("GET", "/v1/content/node.title", p.Key, nil).Expect(t, 200).JSON(t)["value"])
	require.True(t, got.Invalid.IsError)
	require.Contains(t, got.Invalid.Text, "missing property 'value'")
}
