//go:build !race

package main

// raceBuild: these tests run without the race detector.
const raceBuild = false
