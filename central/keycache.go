package central

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plinth-dev/plinth/tenant"
)

// The key cache: resolved keys by hash and projects by id, each for at
// most the TTL (PLINTH_KEY_CACHE_TTL), dropped at once by the
// invalidations every instance hears (Central.notify, Central.Listen).

type keyEntry struct {
	scope   *tenant.Scope
	expires time.Time
}

type projectEntry struct {
	p       *tenant.Project
	expires time.Time
}

// keyCache holds resolved keys (by hash) and projects (by id) for at most ttl.
type keyCache struct {
	ttl time.Duration
	mu  sync.RWMutex
	// gen counts invalidations (changed under mu). A fill carries the
	// generation read before its database lookup and is dropped if an
	// invalidation came in between: what it read may be the key before
	// its revocation, and the notification that would have removed it
	// is already spent, so a revoked key would work until the TTL.
	gen      atomic.Uint64
	byHash   map[string]*keyEntry
	projects map[string]projectEntry
	touched  map[string]time.Time // key id → last last_used_at write
	// beforeFill, set only by tests, runs between a lookup and its fill.
	beforeFill func()
}

func newKeyCache(ttl time.Duration) *keyCache {
	return &keyCache{ttl: ttl, byHash: map[string]*keyEntry{}, projects: map[string]projectEntry{}, touched: map[string]time.Time{}}
}

// get returns the fresh entry of hash. It takes the hash as bytes: the
// map lookup converts them without allocating.
func (k *keyCache) get(hash []byte) (*keyEntry, bool) {
	k.mu.RLock()
	e, ok := k.byHash[string(hash)]
	k.mu.RUnlock()
	if !ok || time.Now().After(e.expires) {
		return nil, false
	}
	return e, true
}

// generation is read before a lookup whose result is to be put.
func (k *keyCache) generation() uint64 { return k.gen.Load() }

// put caches a key's scope, looked up at generation gen.
func (k *keyCache) put(hash string, s *tenant.Scope, gen uint64) {
	if k.ttl <= 0 {
		return
	}
	if k.beforeFill != nil {
		k.beforeFill()
	}
	e := &keyEntry{scope: s, expires: time.Now().Add(k.ttl)}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen.Load() != gen {
		return
	}
	if len(k.byHash) > 100_000 {
		k.byHash = map[string]*keyEntry{}
	}
	k.byHash[hash] = e
}

func (k *keyCache) project(pid string) (*tenant.Project, bool) {
	k.mu.RLock()
	e, ok := k.projects[pid]
	k.mu.RUnlock()
	if !ok || time.Now().After(e.expires) {
		return nil, false
	}
	return e.p, true
}

// putProject caches a project, looked up at generation gen.
func (k *keyCache) putProject(p *tenant.Project, gen uint64) {
	if k.beforeFill != nil {
		k.beforeFill()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen.Load() != gen {
		return
	}
	if len(k.projects) > 100_000 {
		k.projects = map[string]projectEntry{}
	}
	k.projects[p.ID] = projectEntry{p: p, expires: time.Now().Add(k.ttl)}
}

// invalidate drops "key:<id>" or every entry of "project:<id>".
func (k *keyCache) invalidate(payload string) {
	kind, ident, _ := strings.Cut(payload, ":")
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gen.Add(1)
	switch kind {
	case "key":
		for h, e := range k.byHash {
			if e.scope.Key != nil && e.scope.Key.ID == ident {
				delete(k.byHash, h)
			}
		}
	case "project":
		delete(k.projects, ident)
		for h, e := range k.byHash {
			if e.scope.Project.ID == ident {
				delete(k.byHash, h)
			}
		}
	default:
		k.byHash = map[string]*keyEntry{}
		k.projects = map[string]projectEntry{}
	}
}

func (k *keyCache) clear() { k.invalidate("all:") }

// touchDue reports whether key id's last_used_at is due a write at now:
// at most once a minute per key and instance (Central.touch). A true
// answer records now as the key's last write.
func (k *keyCache) touchDue(keyID string, now time.Time) bool {
	k.mu.RLock()
	last, ok := k.touched[keyID]
	k.mu.RUnlock()
	if ok && now.Sub(last) < time.Minute {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if last, ok := k.touched[keyID]; ok && now.Sub(last) < time.Minute {
		return false
	}
	if len(k.touched) > 100_000 {
		k.touched = map[string]time.Time{}
	}
	k.touched[keyID] = now
	return true
}
