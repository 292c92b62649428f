// Package config reads the process configuration from the environment once.
package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Config is every setting of docs/decisions.md section 1, with its default.
type Config struct {
	DatabaseURL    string
	Addr           string
	PublicURL      string
	Secret         string
	ErrorBase      string
	Dev            bool
	WebhookRetry   []time.Duration
	WebhookTimeout time.Duration
	KeyCacheTTL    time.Duration
	// SpareSchemas is how many project schemas are kept created ahead of
	// the projects that will claim them (PLINTH_SPARE_SCHEMAS, default 4).
	SpareSchemas   int
	TrustedProxies []netip.Prefix
	PublicRPM      int
	PublicBurst    int
	// LoginRPM and LoginBurst limit each client IP on each of the
	// dashboard's login endpoints (PLINTH_LOGIN_RATE, default 10/20),
	// which run argon2id and are outside the API's limits.
	LoginRPM         int
	LoginBurst       int
	AIProvider       string
	OpenAIBaseURL    string
	OpenAIAPIKey     string
	AIModel          string
	ImageModel       string
	StripeSecretKey  string
	StripeWebhookKey string
	StripeAPIBase    string
	Storage          string
	RedisURL         string
	// Getenv is kept for settings read per platform (PLINTH_SOCIAL_*).
	Getenv func(string) string
}

// Load parses the environment through getenv, applying defaults.
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:      getenv("DATABASE_URL"),
		Addr:             or(getenv("PLINTH_ADDR"), "127.0.0.1:8080"),
		Secret:           getenv("PLINTH_SECRET"),
		ErrorBase:        strings.TrimRight(or(getenv("PLINTH_ERROR_BASE"), "https://plinth.dev/errors"), "/"),
		Dev:              getenv("PLINTH_DEV") == "1",
		AIProvider:       or(getenv("PLINTH_AI_PROVIDER"), "offline"),
		OpenAIBaseURL:    or(getenv("OPENAI_BASE_URL"), "https://api.openai.com/v1"),
		OpenAIAPIKey:     getenv("OPENAI_API_KEY"),
		AIModel:          or(getenv("PLINTH_AI_MODEL"), "gpt-4o-mini"),
		ImageModel:       or(getenv("PLINTH_IMAGE_MODEL"), "gpt-image-1"),
		StripeSecretKey:  getenv("STRIPE_SECRET_KEY"),
		StripeWebhookKey: getenv("STRIPE_WEBHOOK_SECRET"),
		StripeAPIBase:    getenv("STRIPE_API_BASE"),
		Storage:          or(getenv("PLINTH_STORAGE"), "file://./.plinth/media"),
		RedisURL:         getenv("REDIS_URL"),
		Getenv:           getenv,
	}
	c.PublicURL = strings.TrimRight(or(getenv("PLINTH_PUBLIC_URL"), "http://"+c.Addr), "/")
	var err error
	if c.WebhookRetry, err = durations(or(getenv("PLINTH_WEBHOOK_RETRY_DELAYS"), "30s,2m,10m,1h,6h")); err != nil {
		return c, fmt.Errorf("PLINTH_WEBHOOK_RETRY_DELAYS: %w", err)
	}
	if c.WebhookTimeout, err = time.ParseDuration(or(getenv("PLINTH_WEBHOOK_TIMEOUT"), "30s")); err != nil {
		return c, fmt.Errorf("PLINTH_WEBHOOK_TIMEOUT: %w", err)
	}
	if c.KeyCacheTTL, err = time.ParseDuration(or(getenv("PLINTH_KEY_CACHE_TTL"), "30s")); err != nil {
		return c, fmt.Errorf("PLINTH_KEY_CACHE_TTL: %w", err)
	}
	if c.SpareSchemas, err = strconv.Atoi(or(getenv("PLINTH_SPARE_SCHEMAS"), "4")); err != nil || c.SpareSchemas < 0 || c.SpareSchemas > 100 {
		return c, fmt.Errorf("PLINTH_SPARE_SCHEMAS: want 0 to 100, got %q", getenv("PLINTH_SPARE_SCHEMAS"))
	}
	for _, s := range strings.Split(or(getenv("PLINTH_TRUSTED_PROXIES"), "127.0.0.0/8,::1/128"), ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return c, fmt.Errorf("PLINTH_TRUSTED_PROXIES: %w", err)
		}
		c.TrustedProxies = append(c.TrustedProxies, p)
	}
	if c.PublicRPM, c.PublicBurst, err = rate(getenv, "PLINTH_PUBLIC_RATE", "120/240"); err != nil {
		return c, err
	}
	if c.LoginRPM, c.LoginBurst, err = rate(getenv, "PLINTH_LOGIN_RATE", "10/20"); err != nil {
		return c, err
	}
	return c, nil
}

// rate reads a limit written RPM/BURST, both at least 1.
func rate(getenv func(string) string, name, def string) (rpm, burst int, err error) {
	v := or(getenv(name), def)
	r, b, ok := strings.Cut(v, "/")
	rpm, err1 := strconv.Atoi(r)
	burst, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || rpm < 1 || burst < 1 {
		return 0, 0, fmt.Errorf("%s: want RPM/BURST, got %q", name, v)
	}
	return rpm, burst, nil
}

// String masks secrets, so a Config can be logged.
func (c Config) String() string {
	return fmt.Sprintf("addr=%s public_url=%s database=%s secret=%s ai=%s stripe=%t redis=%t dev=%t",
		c.Addr, c.PublicURL, mask(c.DatabaseURL), mask(c.Secret), c.AIProvider, c.StripeSecretKey != "", c.RedisURL != "", c.Dev)
}

func mask(s string) string {
	if s == "" {
		return "(unset)"
	}
	return "(set)"
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func durations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, p := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
