// Package logintiming_test measures whether the login endpoints take the
// same time for a known and an unknown email. Its own package: the test
// runs with none of central's tests beside it (they would skew its
// medians), and central's parallel tests need not wait for its minute of
// sequential sampling.
package logintiming_test

import (
	"testing"

	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
