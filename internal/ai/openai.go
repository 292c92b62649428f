package ai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // DecodeConfig of generated images
	_ "image/jpeg"
	_ "image/png"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// OpenAI speaks the OpenAI HTTP API (chat completions and image
// generation), which many providers and local servers also serve.
type OpenAI struct {
	BaseURL    string // e.g. https://api.openai.com/v1
	APIKey     string
	Model      string // chat model
	ImageModel string
	Logger     *slog.Logger
	HTTP       *http.Client

	// MaxAttempts bounds the tries of one call (default 5).
	MaxAttempts int
	// BaseDelay and MaxDelay shape the exponential backoff with full
	// jitter between tries (defaults 500ms and 30s). A Retry-After header
	// is honoured instead, capped at MaxDelay.
	BaseDelay, MaxDelay time.Duration
	// TextTimeout and ImageTimeout bound one attempt (defaults 60s, 180s).
	TextTimeout, ImageTimeout time.Duration
}

// Name implements Provider.
func (c *OpenAI) Name() string { return "openai" }

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model          string         `json:"model"`
	Messages       []chatMessage  `json:"messages"`
	MaxTokens      int            `json:"max_tokens,omitempty"`
	ResponseFormat map[string]any `json:"response_format,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
			Refusal string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

func (c *OpenAI) chat(ctx context.Context, system, prompt string, maxTokens int, format map[string]any) (string, error) {
	req := chatRequest{Model: c.Model, MaxTokens: maxTokens, ResponseFormat: format}
	if system != "" {
		req.Messages = append(req.Messages, chatMessage{Role: "system", Content: system})
	}
	req.Messages = append(req.Messages, chatMessage{Role: "user", Content: prompt})
	var res chatResponse
	if err := c.call(ctx, "/chat/completions", req, &res, or(c.TextTimeout, 60*time.Second)); err != nil {
		return "", err
	}
	if len(res.Choices) == 0 {
		return "", &UpstreamError{Status: 200, Attempts: 1, Msg: "the answer has no choices"}
	}
	ch := res.Choices[0]
	if ch.Message.Refusal != "" {
		return "", &UpstreamError{Status: 200, Attempts: 1, Msg: "the model refused: " + ch.Message.Refusal}
	}
	return ch.Message.Content, nil
}

// Text implements Provider.
func (c *OpenAI) Text(ctx context.Context, req TextRequest) (string, error) {
	return c.chat(ctx, req.System, req.Prompt, req.MaxTokens, nil)
}

// JSON implements Provider with a json_schema response format. The
// answer is validated against req.Schema: an answer that is not JSON or
// does not match is asked for again, up to MaxAttempts answers in all (a
// model that strays once usually answers well the next time), and then
// the call fails with an *UpstreamError.
func (c *OpenAI) JSON(ctx context.Context, req JSONRequest, out any) error {
	name := req.Name
	if name == "" {
		name = "result"
	}
	if _, err := compileSchema(req.Schema); err != nil {
		return err // the caller's schema is wrong: no answer can match it
	}
	attempts := or(c.MaxAttempts, 5)
	for attempt := 1; ; attempt++ {
		content, err := c.chat(ctx, req.System, req.Prompt, 0, map[string]any{
			"type":        "json_schema",
			"json_schema": map[string]any{"name": name, "schema": req.Schema},
		})
		if err != nil {
			return err
		}
		err = checkAnswer(content, req.Schema, out)
		if err == nil {
			return nil
		}
		if attempt >= attempts {
			return &UpstreamError{Status: 200, Attempts: attempt, Msg: "the answer is not the JSON asked for: " + err.Error()}
		}
		if c.Logger != nil {
			c.Logger.WarnContext(ctx, "ai provider gave a malformed structured answer; asking again", "schema", name, "attempt", attempt, "err", err)
		}
	}
}

var translationSchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"translations": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
	"required":             []string{"translations"},
	"additionalProperties": false,
}

// Translate implements Provider: the texts go as one JSON array and come
// back as one, in order.
func (c *OpenAI) Translate(ctx context.Context, req TranslateRequest) ([]string, error) {
	if len(req.Texts) == 0 {
		return []string{}, nil
	}
	in, err := json.Marshal(req.Texts)
	if err != nil {
		return nil, err
	}
	system := "You translate website copy. Keep meaning, tone, HTML tags, placeholders such as {name} and line breaks. " +
		"Answer with a JSON object {\"translations\": [...]} holding exactly one translation per input string, in the same order."
	if req.Context != "" {
		system += " The website: " + req.Context
	}
	prompt := fmt.Sprintf("Translate each string of this JSON array from %s to %s:\n%s", langName(req.From), langName(req.To), in)
	var out struct {
		Translations []string `json:"translations"`
	}
	if err := c.JSON(ctx, JSONRequest{System: system, Prompt: prompt, Name: "translations", Schema: translationSchema}, &out); err != nil {
		return nil, err
	}
	if len(out.Translations) != len(req.Texts) {
		return nil, &UpstreamError{Status: 200, Attempts: 1,
			Msg: fmt.Sprintf("asked for %d translations, got %d", len(req.Texts), len(out.Translations))}
	}
	return out.Translations, nil
}

func langName(code string) string {
	if code == "" {
		return "the source language"
	}
	return "the language with code " + code
}

type imageRequest struct {
	Model          string `json:"model"`
	Prompt         string `json:"prompt"`
	N              int    `json:"n"`
	Size           string `json:"size,omitempty"`
	ResponseFormat string `json:"response_format,omitempty"`
}

type imageResponse struct {
	Data []struct {
		B64JSON string `json:"b64_json"`
		URL     string `json:"url"`
	} `json:"data"`
}

// maxImageBytes bounds an image fetched from a URL the API returned.
const maxImageBytes = 25 << 20

// Image implements Provider with /images/generations.
func (c *OpenAI) Image(ctx context.Context, req ImageRequest) (*Image, error) {
	ir := imageRequest{Model: c.ImageModel, Prompt: req.Prompt, N: 1}
	if req.Width > 0 && req.Height > 0 {
		ir.Size = fmt.Sprintf("%dx%d", req.Width, req.Height)
	}
	if strings.HasPrefix(c.ImageModel, "dall-e") {
		ir.ResponseFormat = "b64_json" // gpt-image models always answer b64_json and refuse the field
	}
	var res imageResponse
	if err := c.call(ctx, "/images/generations", ir, &res, or(c.ImageTimeout, 180*time.Second)); err != nil {
		return nil, err
	}
	if len(res.Data) == 0 {
		return nil, &UpstreamError{Status: 200, Attempts: 1, Msg: "the answer has no image"}
	}
	var data []byte
	switch d := res.Data[0]; {
	case d.B64JSON != "":
		b, err := base64.StdEncoding.DecodeString(d.B64JSON)
		if err != nil {
			return nil, &UpstreamError{Status: 200, Attempts: 1, Msg: "the image is not valid base64"}
		}
		data = b
	case d.URL != "":
		b, err := c.fetch(ctx, d.URL)
		if err != nil {
			return nil, err
		}
		data = b
	default:
		return nil, &UpstreamError{Status: 200, Attempts: 1, Msg: "the answer has no image data"}
	}
	img := &Image{Data: data, ContentType: http.DetectContentType(data), Width: req.Width, Height: req.Height}
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
		img.Width, img.Height = cfg.Width, cfg.Height
	}
	if !strings.HasPrefix(img.ContentType, "image/") {
		return nil, &UpstreamError{Status: 200, Attempts: 1, Msg: "the answer is not an image (" + img.ContentType + ")"}
	}
	return img, nil
}

func (c *OpenAI) fetch(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, or(c.ImageTimeout, 180*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, &UpstreamError{Attempts: 1, Msg: "bad image URL: " + err.Error()}
	}
	res, err := c.client().Do(req)
	if err != nil {
		return nil, &UpstreamError{Attempts: 1, Msg: err.Error()}
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, &UpstreamError{Status: res.StatusCode, Attempts: 1, Msg: "fetching the generated image failed"}
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxImageBytes+1))
	if err != nil {
		return nil, &UpstreamError{Attempts: 1, Msg: err.Error()}
	}
	if len(b) > maxImageBytes {
		return nil, &UpstreamError{Status: 200, Attempts: 1, Msg: "the generated image is too large"}
	}
	return b, nil
}

func (c *OpenAI) client() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// call POSTs body to path and decodes the JSON answer into out, retrying
// network failures, 429 and 5xx with backoff (honouring Retry-After).
// Other statuses fail at once. Every failure is an *UpstreamError.
func (c *OpenAI) call(ctx context.Context, path string, body, out any, timeout time.Duration) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return err
	}
	attempts := or(c.MaxAttempts, 5)
	url := strings.TrimRight(c.BaseURL, "/") + path
	var last *UpstreamError
	for attempt := 1; attempt <= attempts; attempt++ {
		status, retryAfter, err := c.once(ctx, url, payload, out, timeout)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err() // cancelled or out of time: not the provider's fault
		}
		last = &UpstreamError{Status: status, Attempts: attempt, Msg: err.Error()}
		retryable := status == 0 || status == http.StatusTooManyRequests || status >= 500
		if !retryable || attempt == attempts {
			break
		}
		delay := c.backoff(attempt, retryAfter)
		if c.Logger != nil {
			c.Logger.WarnContext(ctx, "ai provider call failed; retrying", "path", path, "status", status, "attempt", attempt, "delay", delay, "err", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return last
}

// backoff is the wait before try attempt+1: Retry-After when given
// (retryAfter >= 0, capped at MaxDelay), else full jitter over BaseDelay*2^(attempt-1), capped.
func (c *OpenAI) backoff(attempt int, retryAfter time.Duration) time.Duration {
	maxDelay := or(c.MaxDelay, 30*time.Second)
	if retryAfter >= 0 {
		return min(retryAfter, maxDelay)
	}
	ceil := min(or(c.BaseDelay, 500*time.Millisecond)<<(attempt-1), maxDelay)
	return time.Duration(rand.Int64N(int64(ceil) + 1))
}

func (c *OpenAI) once(ctx context.Context, url string, payload []byte, out any, timeout time.Duration) (status int, retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return 0, -1, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	res, err := c.client().Do(req)
	if err != nil {
		return 0, -1, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return 0, -1, err
	}
	if res.StatusCode/100 != 2 {
		return res.StatusCode, parseRetryAfter(res.Header.Get("Retry-After")), errors.New(apiMessage(b, res.Status))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return res.StatusCode, -1, fmt.Errorf("the answer is not JSON: %w", err)
	}
	return res.StatusCode, -1, nil
}

// apiMessage extracts {"error": {"message"}} from an error body.
func apiMessage(body []byte, status string) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return status
}

// parseRetryAfter reads delay-seconds or an HTTP date; -1 when absent or
// unreadable.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return -1
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return -1
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
