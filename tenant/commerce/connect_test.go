package commerce_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConnectOnboarding(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.do(t, "GET", "/payments/connect", nil).Expect(t, 200).JSON(t)
	assert.Equal(t, map[string]any{"account_id": nil, "charges_enabled": false, "payouts_enabled": false, "details_submitted": false}, c)

	body := map[string]any{"return_url": "https://shop.test/back", "refresh_url": "https://shop.test/again"}
	writer := f.p.NewKey(false, "commerce:write", "commerce:read")
	f.env.Do("POST", "/v1/payments/connect/onboard", writer, body).Problem(t, 403, "forbidden")
	f.do(t, "POST", "/payments/connect/onboard", map[string]any{"return_url": "https://shop.test/back"}).Problem(t, 400, "bad_request")
	f.do(t, "POST", "/payments/connect/onboard", map[string]any{"return_url": "back", "refresh_url": "https://a.test"}).Problem(t, 422, "validation_failed")
	assert.Empty(t, f.mock.Requests("POST /v1/accounts"))

	// Concurrent first onboardings create one account.
	var wg sync.WaitGroup
	urls := make([]string, 4)
	for i := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := f.tryDo("POST", "/payments/connect/onboard", body)
			if !assert.NoError(t, err) || !assert.Equal(t, 200, res.Status, "%s", res.Body) {
				return
			}
			var m struct {
				URL string `json:"url"`
			}
			assert.NoError(t, json.Unmarshal(res.Body, &m), "%s", res.Body)
			urls[i] = m.URL
		}()
	}
	wg.Wait()
	for _, u := range urls {
		assert.True(t, strings.HasPrefix(u, "https://"), u)
	}
	accounts := f.mock.Requests("POST /v1/accounts")
	require.Len(t, accounts, 1)
	assert.Equal(t, "express", accounts[0].Form.Get("type"))
	assert.Equal(t, f.p.ID, accounts[0].Form.Get("metadata[project_id]"))
	assert.Equal(t, "plinth-connect-"+f.p.ID, accounts[0].Header.Get("Idempotency-Key"))
	acct := f.accountID(t)
	require.True(t, strings.HasPrefix(acct, "acct_"), acct)

	links := f.mock.Requests("POST /v1/account_links")
	require.Len(t, links, 4)
	assert.Equal(t, acct, links[0].Form.Get("account"))
	assert.Equal(t, "account_onboarding", links[0].Form.Get("type"))
	assert.Equal(t, "https://shop.test/back", links[0].Form.Get("return_url"))
	assert.Equal(t, "https://shop.test/again", links[0].Form.Get("refresh_url"))

	// The account maps to the project centrally, for the processor's events.
	var project string
	require.NoError(t, f.env.Server.Pool.QueryRow(context.Background(),
		`SELECT project_id FROM central.payment_accounts WHERE account_id = $1`, acct).Scan(&project))
	assert.Equal(t, f.p.ID, project)

	// The status comes from the processor; a change is stored.
	reader := f.p.NewKey(false, "commerce:read")
	c = f.env.Do("GET", "/v1/payments/connect", reader, nil).Expect(t, 200).JSON(t)
	assert.Equal(t, map[string]any{"account_id": acct, "charges_enabled": false, "payouts_enabled": false, "details_submitted": false}, c)
	rec := f.recordEvents(t)
	f.mock.Patch("/v1/accounts/"+acct, map[string]any{"charges_enabled": true, "payouts_enabled": false, "details_submitted": true})
	c = f.env.Do("GET", "/v1/payments/connect", reader, nil).Expect(t, 200).JSON(t)
	want := map[string]any{"account_id": acct, "charges_enabled": true, "payouts_enabled": false, "details_submitted": true}
	assert.Equal(t, want, c)
	rec.expectConnect(t, want)
	f.env.Do("GET", "/v1/payments/connect", reader, nil).Expect(t, 200)
	rec.none(t)
	assert.True(t, queryOne[bool](t, f, `SELECT charges_enabled FROM payment_account`))
	// With charges enabled, checkout works.
	pid := f.product(t, nil)
	f.checkout(t, item(pid, 1)).Expect(t, 201)

	// A second onboarding reuses the account: a new link only.
	f.do(t, "POST", "/payments/connect/onboard", body).Expect(t, 200)
	assert.Len(t, f.mock.Requests("POST /v1/accounts"), 1)

	// The processor unreachable: the last known status is served.
	f.mock.Fail("GET /v1/accounts/"+acct, 400, "invalid_request_error", "nope")
	assert.Equal(t, want, f.env.Do("GET", "/v1/payments/connect", reader, nil).Expect(t, 200).JSON(t))
}

// account.updated events move the status; only a change emits.
func TestConnectAccountUpdatedEvent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.onboard(t)
	rec := f.recordEvents(t)
	obj := map[string]any{"id": acct, "object": "account", "charges_enabled": true, "payouts_enabled": true, "details_submitted": true}
	f.event(t, "evt_cu_1", "account.updated", acct, obj).Expect(t, 200)
	rec.expectConnect(t, map[string]any{"account_id": acct, "charges_enabled": true, "payouts_enabled": true, "details_submitted": true})
	f.event(t, "evt_cu_2", "account.updated", acct, obj).Expect(t, 200)
	rec.none(t)
	// An event about another account of the same project's mapping is ignored.
	obj["id"], obj["charges_enabled"] = "acct_other", false
	f.event(t, "evt_cu_3", "account.updated", acct, obj).Expect(t, 200)
	rec.none(t)
}
