package logging

import (
	"io"
	"sync"
	"time"
)

// A Buffer gathers a serving process's log lines and writes them together
// at most Every after the first of them, or at once when MaxBuffer bytes
// are waiting: one write system call per batch rather than one per line,
// where an access log writes a line per request. New writes what a
// warning or an error adds at once (with the lines before it), and Flush
// writes the rest, as a process does before it exits.
type Buffer struct {
	out   io.Writer
	every time.Duration

	mu      sync.Mutex
	buf     []byte
	pending bool // a flush is scheduled
	err     error
}

// Every is how long a line may wait in a Buffer.
const Every = 50 * time.Millisecond

// MaxBuffer is the size at which a Buffer writes without waiting.
const MaxBuffer = 64 << 10

// Buffered returns out behind a Buffer, or out itself when it is a
// terminal (a person watching wants each line as it comes).
func Buffered(out io.Writer) io.Writer {
	if isTerminal(out) {
		return out
	}
	return &Buffer{out: out, every: Every}
}

// Write keeps p for the next flush. An error of an earlier write is
// returned once.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) >= MaxBuffer {
		b.flushLocked()
	} else if !b.pending {
		b.pending = true
		time.AfterFunc(b.every, func() { _ = b.Flush() })
	}
	err := b.err
	b.err = nil
	return len(p), err
}

// Flush writes what is waiting.
func (b *Buffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
	err := b.err
	b.err = nil
	return err
}

func (b *Buffer) flushLocked() {
	b.pending = false
	if len(b.buf) == 0 {
		return
	}
	if _, err := b.out.Write(b.buf); err != nil && b.err == nil {
		b.err = err
	}
	if cap(b.buf) > 4*MaxBuffer {
		b.buf = nil // a burst's buffer is not kept for good
		return
	}
	b.buf = b.buf[:0]
}
