//go:build !linux

package pgtest

import "time"

// watchClusters finds the clusters the tests start only on Linux.
func watchClusters() bool { return false }

func clustersLeft(time.Duration) []string { return nil }
