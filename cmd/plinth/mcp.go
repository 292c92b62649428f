package main

import (
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plinth-dev/plinth/central/mcp"
)

type mcpCmd struct{}

// Run serves MCP on stdin and stdout, forwarding every call to the
// server at PLINTH_URL with PLINTH_API_KEY: the command an MCP client
// starts to drive a (remote) project locally. Nothing else may write to
// stdout meanwhile; errors go to stderr.
func (c *mcpCmd) Run(e *env) error {
	return mcp.Proxy(e.ctx, mcp.ProxyConfig{URL: e.getenv("PLINTH_URL"), Key: e.getenv("PLINTH_API_KEY"), Version: buildVersion()},
		&sdk.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopWriteCloser{e.stdout}})
}

// nopWriteCloser leaves stdout open when the session ends.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
