package central_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning/archive"
)

// TestImportTableAllowList: an archive may fill only the tables a project
// schema has (less those never imported). One naming a table the schema
// lacks (an unknown name, a control-plane table's) or a name that is no
// table name is a 422 on file naming it, whether the check comes before
// the project is created or while restoring it, and no project is left.
func TestImportTableAllowList(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	admin := newAdminAPI(t, env)
	good := exportedArchive(t, env)
	// naming is the good archive with one more table, name, and its file
	// of one row.
	naming := func(name string) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(good[0].data, &m))
		file := "tables/" + name + ".ndjson"
		m["tables"] = append(m["tables"].([]any), map[string]any{"name": name, "file": file, "rows": 1})
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return retar(t, append(append([]entry{{archive.ManifestName, b}}, good[1:]...), entry{file, []byte(`{"id":1}` + "\n")}))
	}
	projects := func() int { return projectCount(t, env) }
	before := projects()
	for _, name := range []string{"no_such_table", "spare_schemas", "Pages"} {
		t.Run(name, func(t *testing.T) {
			body, ct := importForm(naming(name), "tenant_id", fmt.Sprint(env.TenantID()))
			p := admin.adminSend(t, "POST", "/admin/api/projects/import", body, ct).Problem(t, 422, "validation_failed")
			require.Contains(t, fmt.Sprint(p["errors"].(map[string]any)["file"]), name)
		})
	}
	require.Equal(t, before, projects(), "a refused import left a project")
}
