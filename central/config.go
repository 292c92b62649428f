package central

import (
	"fmt"
	"strings"

	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/tenant"
)

// CheckConfig checks the settings whose values are names the kernel
// defines, which internal/config (knowing no project) reads as they are:
// every plan of PLINTH_DASHBOARD_PLANS must be one of tenant.PlanNames.
// plinth calls it once the configuration is read, so every command fails
// at start as for any other bad setting; NewServer calls it too.
func CheckConfig(cfg config.Config) error {
	for _, p := range cfg.DashboardPlans {
		if !tenant.ValidPlan(p) {
			return fmt.Errorf("PLINTH_DASHBOARD_PLANS: unknown plan %q (plans: %s)", p, strings.Join(tenant.PlanNames, ", "))
		}
	}
	return nil
}
