package pgcluster_test

import (
	"testing"

	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

// TestMain: the tests start clusters of their own; pgtest.Main fails the
// run if one is left running.
func TestMain(m *testing.M) { pgtest.Main(m) }
