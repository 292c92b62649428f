//go:build !linux

package pgtest

import (
	"testing"
	"time"
)

// watchClusters finds the clusters the tests start only on Linux.
func watchClusters() bool { return false }

func clustersLeft(time.Duration) []string { return nil }

// Crash kills a PostgreSQL server as a crash would: only on Linux.
func Crash(t testing.TB, pid int) (reap func()) {
	t.Helper()
	t.Skip("pgtest.Crash needs Linux")
	return nil
}
