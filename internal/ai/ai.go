// Package ai holds the AI providers the jobs use: one interface (text,
// structured JSON, translation, image) with an offline deterministic
// provider, the default, and a client for any OpenAI-compatible HTTP API.
package ai

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/plinth-dev/plinth/internal/config"
)

// Provider generates text, structured JSON, translations and images.
type Provider interface {
	// Name is "offline" or "openai", for logs.
	Name() string
	// Text returns free text for req.
	Text(ctx context.Context, req TextRequest) (string, error)
	// JSON fills out (a pointer) with a JSON value matching req.Schema.
	JSON(ctx context.Context, req JSONRequest, out any) error
	// Translate returns req.Texts translated into req.To, in order.
	Translate(ctx context.Context, req TranslateRequest) ([]string, error)
	// Image generates one image.
	Image(ctx context.Context, req ImageRequest) (*Image, error)
}

// TextRequest asks for free text.
type TextRequest struct {
	System    string
	Prompt    string
	MaxTokens int
}

// JSONRequest asks for a JSON value shaped by a JSON Schema.
type JSONRequest struct {
	System string
	Prompt string
	// Name names the schema (letters, digits, _ and -), as the API wants.
	Name   string
	Schema map[string]any
}

// TranslateRequest asks for texts in another language.
type TranslateRequest struct {
	From, To string
	Texts    []string
	// Context describes the site, so wording fits (optional).
	Context string
}

// ImageRequest asks for one image of about Width x Height pixels.
type ImageRequest struct {
	Prompt        string
	Width, Height int
}

// Image is a generated image: its bytes, content type and real size.
type Image struct {
	Data          []byte
	ContentType   string
	Width, Height int
}

// ErrUpstream is matched (errors.Is) by every failure of the AI provider
// itself: a refused, failed or malformed upstream answer. Jobs end failed
// with the code upstream_unavailable on it.
var ErrUpstream = errors.New("ai: upstream unavailable")

// UpstreamError is a failed call to the provider.
type UpstreamError struct {
	// Status is the last HTTP status (0 for a network failure).
	Status int
	// Attempts made before giving up.
	Attempts int
	Msg      string
}

func (e *UpstreamError) Error() string {
	if e.Status > 0 {
		return fmt.Sprintf("ai provider answered %d after %d attempt(s): %s", e.Status, e.Attempts, e.Msg)
	}
	return fmt.Sprintf("ai provider unreachable after %d attempt(s): %s", e.Attempts, e.Msg)
}

// Public describes the failure without the provider's own words, which
// may quote the operator's account details: for the job's error message.
func (e *UpstreamError) Public() string {
	if e.Status/100 == 2 {
		return fmt.Sprintf("the AI provider gave no usable answer after %d attempt(s)", e.Attempts)
	}
	if e.Status > 0 {
		return fmt.Sprintf("the AI provider answered %d after %d attempt(s)", e.Status, e.Attempts)
	}
	return fmt.Sprintf("the AI provider could not be reached after %d attempt(s)", e.Attempts)
}

// Is makes errors.Is(err, ErrUpstream) true.
func (e *UpstreamError) Is(target error) bool { return target == ErrUpstream }

// New returns the provider cfg selects: PLINTH_AI_PROVIDER offline (the
// default) or openai (OPENAI_BASE_URL, OPENAI_API_KEY, PLINTH_AI_MODEL,
// PLINTH_IMAGE_MODEL).
func New(cfg config.Config, logger *slog.Logger) (Provider, error) {
	switch cfg.AIProvider {
	case "", "offline":
		return Offline{}, nil
	case "openai":
		return &OpenAI{
			BaseURL:    cfg.OpenAIBaseURL,
			APIKey:     cfg.OpenAIAPIKey,
			Model:      cfg.AIModel,
			ImageModel: cfg.ImageModel,
			Logger:     logger,
			HTTP:       &http.Client{Timeout: 5 * time.Minute},
		}, nil
	}
	return nil, fmt.Errorf("PLINTH_AI_PROVIDER: unknown provider %q (want offline or openai)", cfg.AIProvider)
}
