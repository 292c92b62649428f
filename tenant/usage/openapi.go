package usage

import "github.com/plinth-dev/plinth/internal/openapi"

// OpenAPI describes the usage report and its route.
func OpenAPI(d *openapi.Doc) {
	report := d.Schema("Usage", openapi.Obj(openapi.M{
		"period_start": openapi.Timestamp(), "period_end": openapi.Timestamp(), "plan": openapi.Ref("Plan"),
		"plan_credits": openapi.M{"type": "integer"}, "topup_credits": openapi.M{"type": "integer"}, "credits_used": openapi.M{"type": "integer"},
		"credits_remaining": openapi.M{"type": "integer"},
		"breakdown": openapi.Arr(d.Schema("UsageLine", openapi.Obj(openapi.M{"op": openapi.Str(), "count": openapi.M{"type": "integer"}, "credits": openapi.M{"type": "integer"}},
			"op", "count", "credits"))),
	}, "period_start", "period_end", "plan", "plan_credits", "topup_credits", "credits_used", "credits_remaining", "breakdown"))
	d.Add("GET", "/v1/projects/me/usage", openapi.Op{ID: "getUsage", Summary: "Credit usage of a period", Tag: "project", Scope: "project:read",
		Query: []openapi.M{{"name": "period", "in": "query", "schema": openapi.M{"type": "string", "enum": []any{"current", "previous"}}}},
		Errs:  []int{422},
		OK:    []openapi.Resp{{Status: 200, Desc: "The usage report.", Content: openapi.JSON(report)}}})
}
