package dashboard

import (
	"net/http"
	"net/url"

	"github.com/plinth-dev/plinth/tenant/credits"
)

// usageReport is the API's usage report of a period, as the usage
// service (tenant/credits) writes it.
type usageReport = credits.Usage

func (d *Dashboard) usage(r *http.Request, projectID string) (usageReport, error) {
	var u usageReport
	err := d.call(r, "GET", "/central/api/projects/"+url.PathEscape(projectID)+"/usage", nil, &u)
	return u, err
}

// Geometry of the usage chart, in SVG user units.
const (
	chartWidth = 640
	chartLabel = 170 // the operation names' column
	chartBars  = 380 // the longest bar
	chartRow   = 30
)

// bar is one operation's row of the usage chart.
type bar struct {
	Op             string
	Count, Credits int64
	// Y is the row's top; BarY the bar's; ValueX where its number goes.
	Y, BarY, Width, ValueX int
}

// usageChart is what the template draws as inline SVG: one bar per
// operation, the longest for the operation that used most credits.
type usageChart struct {
	Bars          []bar
	Width, Height int
	LabelX, BarX  int
}

func newUsageChart(u usageReport) usageChart {
	c := usageChart{Width: chartWidth, LabelX: chartLabel - 8, BarX: chartLabel}
	var most int64
	for _, it := range u.Breakdown {
		most = max(most, it.Credits)
	}
	for i, it := range u.Breakdown {
		w := 0
		if most > 0 {
			w = int(it.Credits * chartBars / most)
		}
		if it.Credits > 0 {
			w = max(w, 2) // a used operation stays visible beside a large one
		}
		y := i * chartRow
		c.Bars = append(c.Bars, bar{Op: it.Op, Count: it.Count, Credits: it.Credits, Y: y, BarY: y + 5, Width: w, ValueX: chartLabel + w + 6})
	}
	c.Height = max(len(c.Bars), 1) * chartRow
	return c
}
