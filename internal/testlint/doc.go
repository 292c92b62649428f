// Package testlint holds checks of the repository's own tests that go
// vet does not make; it has no code, only tests.
package testlint
