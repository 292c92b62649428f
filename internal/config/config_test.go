package config_test

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/internal/config"
)

func load(env map[string]string) (config.Config, error) {
	return config.Load(func(k string) string { return env[k] })
}

// TestRates: the per-IP limits are RPM/BURST with their defaults; a
// malformed value is refused at start, naming the variable.
func TestRates(t *testing.T) {
	c, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.LoginRPM != 10 || c.LoginBurst != 20 || c.PublicRPM != 120 || c.PublicBurst != 240 {
		t.Fatalf("defaults: login %d/%d, public %d/%d", c.LoginRPM, c.LoginBurst, c.PublicRPM, c.PublicBurst)
	}
	c, err = load(map[string]string{"PLINTH_LOGIN_RATE": "3/5", "PLINTH_PUBLIC_RATE": "60/90"})
	if err != nil || c.LoginRPM != 3 || c.LoginBurst != 5 || c.PublicRPM != 60 || c.PublicBurst != 90 {
		t.Fatalf("set: login %d/%d, public %d/%d, %v", c.LoginRPM, c.LoginBurst, c.PublicRPM, c.PublicBurst, err)
	}
	for _, name := range []string{"PLINTH_LOGIN_RATE", "PLINTH_PUBLIC_RATE"} {
		for _, bad := range []string{"10", "10/", "/20", "0/20", "10/0", "ten/20", "10/20/30"} {
			if _, err := load(map[string]string{name: bad}); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%q: %v, want an error naming it", name, bad, err)
			}
		}
	}
}
