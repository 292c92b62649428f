// Package archive writes a project to a portable archive and creates a
// new project from one: the export and import of the admin API and of
// `plinth project export|import` (docs/operations.md, "Export and
// import").
//
// An archive is a .tar.gz holding, in this order: manifest.json (format,
// project, migration level, tables with their row counts, media), one
// NDJSON file per table under tables/ (one row_to_json object a line,
// read with COPY in one snapshot), and the project's media objects under
// media/, named by their key below the project's prefix.
package archive

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/tenant"
)

// FormatName and FormatVersion identify an archive this package reads.
const (
	FormatName    = "plinth.project-archive"
	FormatVersion = 1
	// ManifestName is the archive's first entry.
	ManifestName = "manifest.json"
)

// Skipped are the tables of a project schema an archive leaves out, with
// the reason (docs/operations.md lists them). A table not named here is
// exported, so a new pillar's data is never silently lost.
var Skipped = map[string]string{
	"goose_db_version":    "the migration level is in the manifest",
	"idempotency_keys":    "stored answers to requests made with the source's API keys, which are not copied",
	"jobs":                "jobs belong to the source's job queue; their results are in the rows they wrote",
	"job_events":          "events of the source's jobs",
	"webhook_endpoints":   "webhooks name the source's receivers and signing secrets: a copy must not send its events to them",
	"webhook_events":      "the source's webhook outbox",
	"webhook_deliveries":  "the source's webhook deliveries",
	"social_accounts":     "sealed OAuth tokens of the source's social accounts",
	"social_oauth_states": "OAuth flows in progress on the source",
	"payment_account":     "the source's account at the payment processor",
	"credit_pools":        "credits are money: a copy must not duplicate a balance bought for the source",
	"credit_ledger":       "the source's credit history",
}

// Manifest is manifest.json.
type Manifest struct {
	Format        string     `json:"format"`
	FormatVersion int        `json:"format_version"`
	CreatedAt     time.Time  `json:"created_at"`
	Project       Project    `json:"project"`
	Migrations    Migrations `json:"migrations"`
	Tables        []Table    `json:"tables"`
	Media         []Media    `json:"media"`
}

// Project is the exported project's settings.
type Project struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	Slug            string   `json:"slug"`
	Plan            string   `json:"plan"`
	Industry        string   `json:"industry"`
	DefaultLanguage string   `json:"default_language"`
	TargetLanguages []string `json:"target_languages"`
	Timezone        string   `json:"timezone"`
	AllowedOrigins  []string `json:"allowed_origins"`
	SiteURL         string   `json:"site_url"`
	// FallbackLanguages are the locale fallback chains (absent from
	// archives made before them).
	FallbackLanguages tenant.Fallbacks `json:"fallback_languages,omitempty"`
}

// Migrations is the level of the exported schema: the highest tenant
// migration version and every version applied.
type Migrations struct {
	Version int64   `json:"version"`
	Applied []int64 `json:"applied"`
}

// Table is one table's file.
type Table struct {
	Name string `json:"name"`
	File string `json:"file"`
	Rows int64  `json:"rows"`
}

// Media is one media object's file; Key is below the project's prefix.
type Media struct {
	Key  string `json:"key"`
	File string `json:"file"`
	Size int64  `json:"size"`
}

// RowCounts maps each table to its row count.
func (m Manifest) RowCounts() map[string]int64 {
	out := make(map[string]int64, len(m.Tables))
	for _, t := range m.Tables {
		out[t.Name] = t.Rows
	}
	return out
}

// Plane is what an export needs of the control plane (*central.Central).
type Plane interface {
	Project(ctx context.Context, id string) (*tenant.Project, error)
	ShardPool(shard string) (*pgxpool.Pool, error)
}

// ErrInvalid marks an archive Import refuses: malformed, of an unknown
// format, over a limit, or with an entry outside its place. The API
// answers it with 422.
var ErrInvalid = errors.New("invalid archive")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

var tableRe = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)
