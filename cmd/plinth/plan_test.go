package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestProjectPlan: the operator changes a project's plan with `plinth
// project plan` (no API key can), and the allowance follows at once.
func TestProjectPlan(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("free")
	getenv := func(k string) string {
		return map[string]string{"DATABASE_URL": env.DB.URL, "PLINTH_SECRET": env.Config.Secret}[k]
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"project", "plan", "--project", p.ID, "--plan", "scale"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("project plan: %v: %s", err, errOut.String())
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res["id"] != p.ID || res["plan"] != "scale" {
		t.Fatalf("project plan printed %q (%v)", out.String(), err)
	}
	u := env.Do("GET", "/v1/projects/me/usage", p.Key, nil).Expect(t, 200).JSON(t)
	if u["plan"] != "scale" || u["plan_credits"] != float64(50000) {
		t.Fatalf("usage after the plan change: %v", u)
	}
	for _, args := range [][]string{
		{"--project", p.ID, "--plan", "gold"},
		{"--project", p.ID},
		{"--project", "prj_nope", "--plan", "build"},
	} {
		if err := run(context.Background(), append([]string{"project", "plan"}, args...), getenv, &out, &errOut); err == nil {
			t.Errorf("project plan %v: no error", args)
		}
	}
}
