package logintiming_test

import (
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// BenchmarkCentralLoginTiming samples 200 requests each for a known and an
// unknown email on tenants-for-email and login, side by side, and reports
// the medians and their ratio (target: within 5% of 1).
func BenchmarkCentralLoginTiming(b *testing.B) {
	var res []timing
	for i := 0; i < b.N; i++ {
		res = loginTimings(b, apitest.New(b), 200, true)
	}
	for _, tm := range res {
		b.Log(tm)
	}
	b.ReportMetric(res[0].ratio(), "tenants_ratio")
	b.ReportMetric(float64(res[0].known.Microseconds())/1000, "tenants_known_ms")
	b.ReportMetric(float64(res[0].unknown.Microseconds())/1000, "tenants_unknown_ms")
	b.ReportMetric(res[1].ratio(), "login_ratio")
	b.ReportMetric(float64(res[1].known.Microseconds())/1000, "login_known_ms")
	b.ReportMetric(float64(res[1].unknown.Microseconds())/1000, "login_unknown_ms")
}
