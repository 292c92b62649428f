//go:build race

package main

// raceBuild: these tests run with the race detector (go test -race).
const raceBuild = true
