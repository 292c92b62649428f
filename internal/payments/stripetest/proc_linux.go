package stripetest

import "syscall"

// procAttr makes stripe-mock receive SIGKILL when the test process ends,
// since a shared process outlives every test's cleanup.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
