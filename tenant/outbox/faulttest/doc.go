// Package faulttest holds the webhook fault test that restarts
// PostgreSQL. It lives in a package of its own because pgtest starts one
// private cluster per test binary: restarting it here cannot disturb any
// other package's tests.
package faulttest
