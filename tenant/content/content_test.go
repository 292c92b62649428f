package content_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
	"github.com/plinth-dev/plinth/tenant/content"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func seed(t *testing.T, p *apitest.Project, lang string, kv ...string) {
	t.Helper()
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		for i := 0; i+1 < len(kv); i += 2 {
			if _, _, err := content.SetValue(context.Background(), tx, kv[i], lang, kv[i+1]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func values(t *testing.T, p *apitest.Project, lang string) map[string]string {
	t.Helper()
	var out map[string]string
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		var err error
		out, err = content.Values(context.Background(), tx, lang, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTranslateContentKeys(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	subscribe(t, env, p)
	seed(t, p, "en", "home.title", "Welcome", "home.cta", "Book now", "footer.note", "Thanks for visiting")
	seed(t, p, "fr", "home.title", "Ancien titre")

	j := env.Do("POST", "/v1/content/translate", p.Key, map[string]any{"languages": []string{"fr", "de"}, "keys": []string{"home.title", "home.cta"}}).Expect(t, 202).JSON(t)
	if j["type"] != "translation.batch" || j["status"] != "pending" || fmt.Sprint(j["steps"]) != "[map[active:false completed:false name:fr] map[active:false completed:false name:de]]" {
		t.Fatalf("submit: %v", j)
	}
	var charged, rows int64
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT sum(amount), count(*) FROM credit_ledger WHERE ref = $1 AND op = 'translate_language'`, j["id"]).Scan(&charged, &rows)
	})
	if err != nil || charged != 1400 || rows != 2 {
		t.Fatalf("charge: %d in %d rows (%v), want 7 credits per language", charged, rows, err)
	}
	done := env.WaitJob(t, p.Key, j["id"].(string))
	if done["status"] != "completed" || fmt.Sprint(done["result"]) != "map[keys_translated:2 locales:[fr de]]" {
		t.Fatalf("job: %v", done)
	}
	fr, de := values(t, p, "fr"), values(t, p, "de")
	if fr["home.title"] != "[fr] Welcome" || fr["home.cta"] != "[fr] Book now" || de["home.cta"] != "[de] Book now" {
		t.Fatalf("values: fr %v de %v", fr, de)
	}
	if _, ok := fr["footer.note"]; ok {
		t.Fatal("only the keys asked for are translated")
	}
	if n := events(t, p, topicChanged); n != 4 {
		t.Fatalf("%d content.changed events, want one per translated value (4)", n)
	}

	// Without keys: every key with a default-language value.
	j = env.Do("POST", "/v1/content/translate", p.Key, map[string]any{"languages": []string{"es"}}).Expect(t, 202).JSON(t)
	done = env.WaitJob(t, p.Key, j["id"].(string))
	if fmt.Sprint(done["result"]) != "map[keys_translated:3 locales:[es]]" || values(t, p, "es")["footer.note"] != "[es] Thanks for visiting" {
		t.Fatalf("all keys: %v", done)
	}
}

func TestTranslateValidation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("POST", "/v1/content/translate", p.Key, map[string]any{"languages": []string{"fr"}}).Problem(t, 422, "validation_failed") // nothing to translate
	seed(t, p, "en", "a", "A")
	cases := []struct {
		name   string
		body   any
		status int
		field  string
	}{
		{"no languages", map[string]any{"keys": []string{"a"}}, 400, ""},
		{"empty languages", map[string]any{"languages": []string{}}, 422, "languages"},
		{"default language", map[string]any{"languages": []string{"en"}}, 422, "languages"},
		{"bad code", map[string]any{"languages": []string{"french!"}}, 422, "languages"},
		{"twice", map[string]any{"languages": []string{"fr", "fr"}}, 422, "languages"},
		{"bad key", map[string]any{"languages": []string{"fr"}, "keys": []string{"Bad Key"}}, 422, "keys"},
		{"missing key", map[string]any{"languages": []string{"fr"}, "keys": []string{"a", "nope"}}, 422, "keys"},
		{"empty keys", map[string]any{"languages": []string{"fr"}, "keys": []string{}}, 422, "keys"},
		{"wrong type", map[string]any{"languages": "fr"}, 422, "languages"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code := "bad_request"
			if c.status == 422 {
				code = "validation_failed"
			}
			m := env.Do("POST", "/v1/content/translate", p.Key, c.body).Problem(t, c.status, code)
			if c.field != "" {
				if _, ok := m["errors"].(map[string]any)[c.field]; !ok {
					t.Fatalf("errors must name %s: %v", c.field, m)
				}
			}
		})
	}
	m := env.Do("POST", "/v1/content/translate", p.Key, map[string]any{"languages": []string{"fr"}, "keys": []string{"a", "nope"}}).Problem(t, 422, "validation_failed")
	if !strings.Contains(fmt.Sprint(m["errors"]), "nope") {
		t.Fatalf("the missing key is named: %v", m)
	}
	env.Do("POST", "/v1/content/translate", p.NewKey(false, "images:write", "jobs:read"), map[string]any{"languages": []string{"fr"}}).Problem(t, 403, "forbidden")

	// 402 states the whole operation's cost: 15 languages of 7 credits.
	poor := env.NewProject("free")
	seed(t, poor, "en", "a", "A")
	langs := strings.Fields("fr de es it pt nl sv da fi no pl cs sk hu ro")
	m = env.Do("POST", "/v1/content/translate", poor.Key, map[string]any{"languages": langs}).Problem(t, 402, "insufficient_credits")
	if m["cost"] != float64(105) || m["balance"] != float64(100) {
		t.Fatalf("402: %v", m)
	}
	if l := env.Do("GET", "/v1/jobs", poor.Key, nil).Expect(t, 200).JSON(t); len(l["data"].([]any)) != 0 {
		t.Fatalf("a refused submit queues nothing: %v", l)
	}
}

func TestSetValue(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	ctx := context.Background()
	err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		c, changed, err := content.SetValue(ctx, tx, "hero.title", "en", "Hi")
		if err != nil || !changed || c.PreviousValue != nil {
			return fmt.Errorf("first value: %+v %v %v", c, changed, err)
		}
		if _, changed, err = content.SetValue(ctx, tx, "hero.title", "en", "Hi"); err != nil || changed {
			return fmt.Errorf("same value must be no change: %v %v", changed, err)
		}
		c, changed, err = content.SetValue(ctx, tx, "hero.title", "en", "Hello")
		if err != nil || !changed || c.PreviousValue == nil || *c.PreviousValue != "Hi" {
			return fmt.Errorf("change: %+v %v %v", c, changed, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		_, _, err := content.SetValue(ctx, tx, "Bad Key", "en", "x")
		return err
	})
	if err == nil {
		t.Fatal("the key pattern is enforced by the table")
	}
}
