package central

// For the benchmark baseline: the query Resolve runs on a cache miss and
// the scan of its row.
var (
	ResolveSQL  = resolveSQL
	ScanProject = scanProject
)

// PrivateCluster is the cluster OpenDatabase runs without DATABASE_URL.
var PrivateCluster = privateCluster

// Resolves is how many keys c has resolved.
func (c *Central) Resolves() int64 { return c.resolves.Load() }

// SetBeforeCacheFill makes f run between each key or project lookup and
// its cache fill (nil: nothing), for a test that calls c on one goroutine.
func (c *Central) SetBeforeCacheFill(f func()) { c.keys.beforeFill = f }

// HoldLoginSlots takes every password-verification slot, as that many
// logins verifying at once would; release gives them back.
func (c *Central) HoldLoginSlots() (release func()) {
	n := cap(c.login.slots)
	for range n {
		c.login.slots <- struct{}{}
	}
	return func() {
		for range n {
			<-c.login.slots
		}
	}
}
