package ratelimit_test

import (
	"testing"

	"github.com/plinth-dev/plinth/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
