package tenant_test

import (
	"testing"

	"github.com/plinth-dev/plinth/tenant"
)

func TestLimits(t *testing.T) {
	t.Parallel()
	rpm, burst := 60, 10
	credits := int64(123456)
	cases := []struct {
		p    tenant.Project
		want tenant.Plan
	}{
		{tenant.Project{Plan: "free"}, tenant.Plan{RPM: 30, Burst: 60, Credits: 100}},
		{tenant.Project{Plan: "hobby"}, tenant.Plan{RPM: 60, Burst: 120, Credits: 2000}},
		{tenant.Project{Plan: "build"}, tenant.Plan{RPM: 240, Burst: 480, Credits: 10000}},
		{tenant.Project{Plan: "scale"}, tenant.Plan{RPM: 1000, Burst: 2000, Credits: 50000}},
		{tenant.Project{Plan: "nonsense"}, tenant.Plan{RPM: 30, Burst: 60, Credits: 100}},
		{tenant.Project{Plan: "enterprise", RateRPM: &rpm, RateBurst: &burst}, tenant.Plan{RPM: 60, Burst: 10, Credits: 50000}},
		{tenant.Project{Plan: "enterprise", RateRPM: &rpm}, tenant.Plan{RPM: 60, Burst: 120, Credits: 50000}},
		{tenant.Project{Plan: "enterprise", PlanCredits: &credits}, tenant.Plan{RPM: 1000, Burst: 2000, Credits: 123456}},
	}
	for _, c := range cases {
		if got := c.p.Limits(); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.p.Plan, got, c.want)
		}
	}
	for _, name := range tenant.PlanNames {
		if !tenant.ValidPlan(name) {
			t.Errorf("%s is listed but not in the table", name)
		}
	}
	if len(tenant.PlanNames) != len(tenant.Plans) {
		t.Errorf("PlanNames lists %d plans, the table has %d", len(tenant.PlanNames), len(tenant.Plans))
	}
}
