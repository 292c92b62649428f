package tenant

// Plan is what a plan grants a project: a request rate (per minute) with
// its burst, and the credits of each monthly period.
type Plan struct {
	RPM     int
	Burst   int
	Credits int64 // whole credits per period
}

// The plans of the contract, by name: Go code names a plan by one of
// these, never by a literal.
const (
	PlanFree       = "free"
	PlanHobby      = "hobby"
	PlanBuild      = "build"
	PlanScale      = "scale"
	PlanEnterprise = "enterprise"
)

// PlanNames lists the plans in the contract's order, cheapest first.
var PlanNames = []string{PlanFree, PlanHobby, PlanBuild, PlanScale, PlanEnterprise}

// Plans is the contract's plan table: the one place its figures are
// written. Enterprise projects may override the rate and the credits
// (Project.RateRPM, RateBurst and PlanCredits).
var Plans = map[string]Plan{
	PlanFree:       {RPM: 30, Burst: 60, Credits: 100},
	PlanHobby:      {RPM: 60, Burst: 120, Credits: 2000},
	PlanBuild:      {RPM: 240, Burst: 480, Credits: 10000},
	PlanScale:      {RPM: 1000, Burst: 2000, Credits: 50000},
	PlanEnterprise: {RPM: 1000, Burst: 2000, Credits: 50000},
}

// ValidPlan reports whether name is a plan of the table.
func ValidPlan(name string) bool {
	_, ok := Plans[name]
	return ok
}

// Limits returns what p is granted: its plan's figures with the project's
// own overrides applied. A rate without a burst gets twice the rate, the
// ratio of every plan; an unknown plan is treated as free.
func (p *Project) Limits() Plan {
	l, ok := Plans[p.Plan]
	if !ok {
		l = Plans[PlanFree]
	}
	if p.RateRPM != nil && *p.RateRPM > 0 {
		l.RPM, l.Burst = *p.RateRPM, 2**p.RateRPM
		if p.RateBurst != nil && *p.RateBurst > 0 {
			l.Burst = *p.RateBurst
		}
	}
	if p.PlanCredits != nil {
		l.Credits = *p.PlanCredits
	}
	return l
}
