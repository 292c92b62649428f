package river

// QueuePauseOpts are optional settings for pausing or resuming a queue.
type QueuePauseOpts struct{}
