package archive_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// BenchmarkExport measures the export of one project of 200 content
// values and 50 pages (the rows of a small site) to a discarded
// archive: listing its tables, COPY of each in one snapshot, the media
// and the compression. docs/performance.md has the figure at 10,000
// projects (cmd/benchscale).
func BenchmarkExport(b *testing.B) {
	env := apitest.New(b)
	p := env.NewProject("enterprise")
	for batch := range 2 {
		var updates []map[string]any
		for i := range 100 {
			updates = append(updates, map[string]any{"key": fmt.Sprintf("k%d.%03d", batch, i), "value": fmt.Sprintf("value %d of the benchmark's project", i)})
		}
		env.Do("PUT", "/v1/content", p.Key, map[string]any{"updates": updates}).Expect(b, 200)
	}
	for i := range 50 {
		env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": fmt.Sprintf("Page %d", i)}).Expect(b, 201)
	}
	ctx := context.Background()
	var size countingWriter
	b.ResetTimer()
	for b.Loop() {
		size = 0
		if _, err := env.Server.Central.ExportProject(ctx, p.ID, &size); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size), "archive-bytes")
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)
