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
	if c.DashboardRPM != 120 || c.DashboardBurst != 60 || c.DashboardIPRPM != 600 || c.DashboardIPBurst != 300 {
		t.Fatalf("dashboard defaults: user %d/%d, ip %d/%d", c.DashboardRPM, c.DashboardBurst, c.DashboardIPRPM, c.DashboardIPBurst)
	}
	for _, name := range []string{"PLINTH_LOGIN_RATE", "PLINTH_PUBLIC_RATE", "PLINTH_DASHBOARD_RATE", "PLINTH_DASHBOARD_IP_RATE"} {
		for _, bad := range []string{"10", "10/", "/20", "0/20", "10/0", "ten/20", "10/20/30"} {
			if _, err := load(map[string]string{name: bad}); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%q: %v, want an error naming it", name, bad, err)
			}
		}
	}
}

// TestDashboardPlans: free by default; a list keeps its order (the first
// is the default) without repeats; an empty list is refused at start.
// The names are the control plane's to check (central.CheckConfig,
// TestCheckConfig): this package reads them as they are.
func TestDashboardPlans(t *testing.T) {
	c, err := load(nil)
	if err != nil || strings.Join(c.DashboardPlans, ",") != "free" {
		t.Fatalf("default: %v %v", c.DashboardPlans, err)
	}
	c, err = load(map[string]string{"PLINTH_DASHBOARD_PLANS": " hobby, free ,hobby"})
	if err != nil || strings.Join(c.DashboardPlans, ",") != "hobby,free" {
		t.Fatalf("set: %v %v", c.DashboardPlans, err)
	}
	c, err = load(map[string]string{"PLINTH_DASHBOARD_PLANS": "free,gold"})
	if err != nil || strings.Join(c.DashboardPlans, ",") != "free,gold" {
		t.Fatalf("unchecked names: %v %v", c.DashboardPlans, err)
	}
	for _, bad := range []string{",", " "} {
		if _, err := load(map[string]string{"PLINTH_DASHBOARD_PLANS": bad}); err == nil || !strings.Contains(err.Error(), "PLINTH_DASHBOARD_PLANS") {
			t.Errorf("%q: %v, want an error naming the variable", bad, err)
		}
	}
}

// TestMediaURL: media URLs default to the public URL; PLINTH_MEDIA_URL
// (a separate origin) replaces it, without its trailing slash; anything
// but an http(s) base is refused at start.
func TestMediaURL(t *testing.T) {
	c, err := load(map[string]string{"PLINTH_PUBLIC_URL": "https://api.example.com/"})
	if err != nil || c.MediaURL != "https://api.example.com" {
		t.Fatalf("default: %q %v", c.MediaURL, err)
	}
	c, err = load(map[string]string{"PLINTH_PUBLIC_URL": "https://api.example.com", "PLINTH_MEDIA_URL": "https://media.example-cdn.com/"})
	if err != nil || c.MediaURL != "https://media.example-cdn.com" || c.PublicURL != "https://api.example.com" {
		t.Fatalf("set: %q %q %v", c.MediaURL, c.PublicURL, err)
	}
	for _, bad := range []string{"media.example.com", "ftp://media.example.com", "https://", "https://m.example.com/?a=1", "https://u:p@m.example.com", "javascript:alert(1)"} {
		if _, err := load(map[string]string{"PLINTH_MEDIA_URL": bad}); err == nil || !strings.Contains(err.Error(), "PLINTH_MEDIA_URL") {
			t.Errorf("%q: %v, want an error naming the variable", bad, err)
		}
	}
}

// TestMaxProjects: 100 projects per workspace by default, 0 for no cap; a
// negative or malformed value is refused at start, naming the variable.
func TestMaxProjects(t *testing.T) {
	testIntVar(t, "PLINTH_MAX_PROJECTS_PER_TENANT", func(c config.Config) int { return c.MaxProjectsPerTenant },
		map[string]int{"": 100, "0": 0, "25": 25}, "-1", "ten", "1.5")
}

// testIntVar checks an integer variable: each value of good (the empty
// string is the default) loads as its figure, each of bad is an error
// naming the variable.
func testIntVar(t *testing.T, name string, field func(config.Config) int, good map[string]int, bad ...string) {
	t.Helper()
	for env, want := range good {
		c, err := load(map[string]string{name: env})
		if err != nil || field(c) != want {
			t.Errorf("%s=%q: %d %v, want %d", name, env, field(c), err, want)
		}
	}
	for _, v := range bad {
		if _, err := load(map[string]string{name: v}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: %v, want an error naming the variable", name, v, err)
		}
	}
}

// TestSpareSchemas: 32 spares by default, enough for a burst of about 40
// creations 4 a second on a shard of 10,000 projects, where a schema takes
// half a second to build (docs/operations.md, "Spare schemas").
func TestSpareSchemas(t *testing.T) {
	testIntVar(t, "PLINTH_SPARE_SCHEMAS", func(c config.Config) int { return c.SpareSchemas },
		map[string]int{"": 32, "0": 0, "100": 100}, "-1", "101", "four")
}
