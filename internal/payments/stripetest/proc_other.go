//go:build !linux

package stripetest

import "syscall"

// procAttr: without Pdeathsig outside Linux, stripe-mock may outlive the
// test process.
func procAttr() *syscall.SysProcAttr { return nil }
