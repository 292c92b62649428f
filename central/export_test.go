package central

// For the benchmark baseline: the query Resolve runs on a cache miss and
// the scan of its row.
var (
	ResolveSQL  = resolveSQL
	ScanProject = scanProject
)
