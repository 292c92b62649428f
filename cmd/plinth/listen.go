package main

import (
	"github.com/plinth-dev/plinth/tenant/outbox"
	"github.com/plinth-dev/plinth/tenant/webhooks/listen"
)

type listenCmd struct {
	ForwardTo string `required:"" name:"forward-to" placeholder:"URL" help:"Receiver on this machine each event is POSTed to, signed as a real delivery, e.g. http://localhost:3000/webhooks (http or https)."`
	Events    string `placeholder:"TOPICS" help:"Comma-separated topics to forward, e.g. order.paid,blog_post.published (default every topic)."`
}

// Run streams the project's webhook events from the server at PLINTH_URL
// (with PLINTH_API_KEY) to a receiver on this machine, which the server
// may not reach: a listen endpoint lives while the command runs, and is
// deleted when it is interrupted.
func (c *listenCmd) Run(e *env) error {
	events := list(c.Events)
	if len(events) == 0 {
		events = outbox.Topics
	}
	return listen.Run(e.ctx, listen.Config{URL: e.getenv("PLINTH_URL"), Key: e.getenv("PLINTH_API_KEY"),
		ForwardTo: c.ForwardTo, Events: events, Out: e.stdout, Log: e.stderr})
}
