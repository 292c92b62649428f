package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestCreditsTopup: `plinth credits topup` adds top-up credits that the
// usage report then shows.
func TestCreditsTopup(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("free")
	getenv := func(k string) string {
		return map[string]string{"DATABASE_URL": env.DB.URL, "PLINTH_SECRET": env.Config.Secret}[k]
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"credits", "topup", "--project", p.ID, "--amount", "500"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("topup: %v: %s", err, errOut.String())
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("output is not one JSON object: %q", out.String())
	}
	if res["project_id"] != p.ID || res["added"] != float64(500) || res["balance"] != float64(600) {
		t.Fatalf("topup printed %v", res)
	}
	u := env.Do("GET", "/v1/projects/me/usage", p.Key, nil).Expect(t, 200).JSON(t)
	if u["topup_credits"] != float64(500) || u["credits_remaining"] != float64(600) || u["plan_credits"] != float64(100) {
		t.Fatalf("usage after topup: %v", u)
	}
	if err := run(context.Background(), []string{"credits", "topup", "--project", p.ID, "--amount", "0"}, getenv, &out, &errOut); err == nil {
		t.Fatal("a zero top-up must fail")
	}
}
