package dashboard_test

import (
	"strconv"

	"github.com/plinth-dev/plinth/central"
)

func centralParams(tenantID int64, name string) central.ProjectParams {
	return central.ProjectParams{TenantID: tenantID, Name: name}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
