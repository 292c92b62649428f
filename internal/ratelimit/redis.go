package ratelimit

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Redis shares buckets across instances through Redis, with the GCRA
// script of go-redis/redis_rate (Redis's own clock, one round trip per
// decision). When Redis fails, decisions fall back to an in-process store
// so that an outage degrades the limit to per instance instead of failing
// every request.
type Redis struct {
	limiter  *redis_rate.Limiter
	fallback Store
	logger   *slog.Logger
	timeout  time.Duration
	failing  atomic.Bool
}

// NewRedis returns a store over client; fallback answers while Redis is
// unreachable.
func NewRedis(client redis.UniversalClient, fallback Store, logger *slog.Logger) *Redis {
	return &Redis{limiter: redis_rate.NewLimiter(client), fallback: fallback, logger: logger, timeout: 250 * time.Millisecond}
}

// Dial parses a redis:// URL (REDIS_URL) and returns a store over it.
func Dial(url string, fallback Store, logger *slog.Logger) (*Redis, redis.UniversalClient, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, err
	}
	c := redis.NewClient(opt)
	return NewRedis(c, fallback, logger), c, nil
}

// Take implements Store.
func (s *Redis) Take(ctx context.Context, key string, l Limit, n int) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	r, err := s.limiter.AllowN(ctx, "plinth:"+key, redis_rate.Limit{Rate: max(l.RPM, 1), Burst: max(l.Burst, 1), Period: time.Minute}, n)
	if err != nil {
		if !s.failing.Swap(true) {
			s.logger.Warn("rate limits: redis unavailable, limiting per instance until it answers", "err", err)
		}
		return s.fallback.Take(ctx, key, l, n)
	}
	if s.failing.Swap(false) {
		s.logger.Info("rate limits: redis answers again")
	}
	res := Result{Allowed: n == 0 || r.Allowed >= n, Remaining: r.Remaining, ResetAfter: max(r.ResetAfter, 0)}
	if !res.Allowed {
		res.RetryAfter = r.RetryAfter
	}
	return res, nil
}
