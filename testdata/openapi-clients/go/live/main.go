// Command live runs the Go client oapi-codegen generates from
// central/openapi.json (package plinth, generated next to it by central's
// TestOpenAPIGoClient) against a live Plinth server, with a key of a
// project of it, and checks that each member of a union is told apart: a
// create body of a blog or social post decodes to its own member (by the
// discriminator of the Typed union: ValueByDiscriminator; a body without
// type is the untyped manual member) and the server answers it as such
// (201 with the post, 202 with the job); and a secret shown once is in the
// first answer and not in a replay. It prints what it checked; the first
// failure ends it with status 1.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"

	"plinth.test/openapiclient/plinth"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: live URL KEY")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "live:", err)
		os.Exit(1)
	}
}

func ptr[T any](v T) *T { return &v }

func run(ctx context.Context, url, key string) error {
	c, err := plinth.NewClientWithResponses(url, plinth.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+key)
		return nil
	}))
	if err != nil {
		return err
	}
	for _, check := range []struct {
		name string
		run  func(context.Context, *plinth.ClientWithResponses) error
	}{
		{"blog posts", blogPosts},
		{"social posts", socialPosts},
		{"key secret", keySecret},
		{"webhook secret", webhookSecret},
	} {
		if err := check.run(ctx, c); err != nil {
			return fmt.Errorf("%s: %w", check.name, err)
		}
		fmt.Println("ok", check.name)
	}
	return nil
}

// typedUnion is a generated union with a discriminator.
type typedUnion interface {
	Discriminator() (string, error)
	ValueByDiscriminator() (any, error)
}

// decode reads a create body as a server built with the generated types
// would: into the request union R, then, when the body names its type, by
// the discriminator of R's Typed member T; a body without type is R's
// untyped member U (a manual post, manual being the default).
func decode[R any, T typedUnion, U any](body []byte, asTyped func(R) (T, error), asUntyped func(R) (U, error)) (any, error) {
	var req R
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	typed, err := asTyped(req)
	if err != nil {
		return nil, err
	}
	d, err := typed.Discriminator()
	if err != nil {
		return nil, err
	}
	if d == "" {
		return asUntyped(req)
	}
	return typed.ValueByDiscriminator()
}

// createCase is a create body, the member it must decode to, and what the
// live server answers it: 201 with the post, or 202 with a job of type job.
type createCase[R any] struct {
	name string
	body R
	want any
	job  string
}

// creates checks each case: its body decodes to its member, and the
// server answers it as that member (send returns the status, the title of
// a created post or the type of a started job, and the body).
func creates[R any, T typedUnion, U any](ctx context.Context, cases []createCase[R], asTyped func(R) (T, error), asUntyped func(R) (U, error),
	send func(context.Context, R) (status int, title, job string, body []byte, err error),
) error {
	for _, c := range cases {
		b, err := json.Marshal(c.body)
		if err != nil {
			return err
		}
		got, err := decode(b, asTyped, asUntyped)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", c.name, b, err)
		}
		if reflect.TypeOf(got) != reflect.TypeOf(c.want) {
			return fmt.Errorf("%s: %s decodes as %T, want %T", c.name, b, got, c.want)
		}
		status, title, job, answer, err := send(ctx, c.body)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if c.job == "" && (status != http.StatusCreated || title != c.name) || c.job != "" && (status != http.StatusAccepted || job != c.job) {
			return fmt.Errorf("%s: the server answered %d %s", c.name, status, answer)
		}
	}
	return nil
}

// from is the request union R holding its Typed member T, built by v
// and put in R by r.
func from[R, T any](v func(*T) error, r func(*R, T) error) (R, error) {
	var t T
	var out R
	if err := v(&t); err != nil {
		return out, err
	}
	return out, r(&out, t)
}

// blogPosts: a manual post named so, an AI one, and a manual post whose
// body leaves type out, the contract's default.
func blogPosts(ctx context.Context, c *plinth.ClientWithResponses) error {
	typed := (*plinth.CreateBlogPostRequest).FromCreateBlogPostTyped
	manual, err := from(func(t *plinth.CreateBlogPostTyped) error {
		return t.FromCreateBlogPostManual(plinth.CreateBlogPostManual{Title: "Manual"})
	}, typed)
	if err != nil {
		return err
	}
	ai, err := from(func(t *plinth.CreateBlogPostTyped) error {
		return t.FromCreateBlogPostAI(plinth.CreateBlogPostAI{Type: plinth.CreateBlogPostAITypeAi, Topic: "Green tea"})
	}, typed)
	if err != nil {
		return err
	}
	var untyped plinth.CreateBlogPostRequest
	if err := untyped.FromCreateBlogPostUntyped(plinth.CreateBlogPostUntyped{Title: "Untyped"}); err != nil {
		return err
	}
	return creates(ctx, []createCase[plinth.CreateBlogPostRequest]{
		{"Manual", manual, plinth.CreateBlogPostManual{}, ""},
		{"AI", ai, plinth.CreateBlogPostAI{}, "blog_post.generate"},
		{"Untyped", untyped, plinth.CreateBlogPostUntyped{}, ""},
	}, plinth.CreateBlogPostRequest.AsCreateBlogPostTyped, plinth.CreateBlogPostRequest.AsCreateBlogPostUntyped,
		func(ctx context.Context, body plinth.CreateBlogPostRequest) (int, string, string, []byte, error) {
			res, err := c.CreateBlogPostWithResponse(ctx, nil, body)
			if err != nil {
				return 0, "", "", nil, err
			}
			var title, job string
			if res.JSON201 != nil {
				title = res.JSON201.Title
			}
			if res.JSON202 != nil {
				job = res.JSON202.Type
			}
			return res.StatusCode(), title, job, res.Body, nil
		})
}

// socialPosts is blogPosts for social posts.
func socialPosts(ctx context.Context, c *plinth.ClientWithResponses) error {
	platforms := &[]plinth.SocialPlatform{plinth.SocialPlatformLinkedin}
	typed := (*plinth.CreateSocialPostRequest).FromCreateSocialPostTyped
	manual, err := from(func(t *plinth.CreateSocialPostTyped) error {
		return t.FromCreateSocialPostManual(plinth.CreateSocialPostManual{Title: "Manual", Platforms: platforms})
	}, typed)
	if err != nil {
		return err
	}
	ai, err := from(func(t *plinth.CreateSocialPostTyped) error {
		return t.FromCreateSocialPostAI(plinth.CreateSocialPostAI{Type: plinth.CreateSocialPostAITypeAi, Topic: "Launch day", Platforms: platforms})
	}, typed)
	if err != nil {
		return err
	}
	var untyped plinth.CreateSocialPostRequest
	if err := untyped.FromCreateSocialPostUntyped(plinth.CreateSocialPostUntyped{Title: "Untyped", Platforms: platforms}); err != nil {
		return err
	}
	return creates(ctx, []createCase[plinth.CreateSocialPostRequest]{
		{"Manual", manual, plinth.CreateSocialPostManual{}, ""},
		{"AI", ai, plinth.CreateSocialPostAI{}, "social_post.generate"},
		{"Untyped", untyped, plinth.CreateSocialPostUntyped{}, ""},
	}, plinth.CreateSocialPostRequest.AsCreateSocialPostTyped, plinth.CreateSocialPostRequest.AsCreateSocialPostUntyped,
		func(ctx context.Context, body plinth.CreateSocialPostRequest) (int, string, string, []byte, error) {
			res, err := c.CreateSocialPostWithResponse(ctx, nil, body)
			if err != nil {
				return 0, "", "", nil, err
			}
			var title, job string
			if res.JSON201 != nil {
				title = res.JSON201.Title
			}
			if res.JSON202 != nil {
				job = res.JSON202.Type
			}
			return res.StatusCode(), title, job, res.Body, nil
		})
}

// replayed checks that an answer is a replay of an Idempotency-Key, or
// the first answer.
func replayed(res *http.Response, want bool) error {
	if got := res.Header.Get("Idempotent-Replayed") == "true"; got != want {
		return fmt.Errorf("Idempotent-Replayed %q, want a replay: %v", res.Header.Get("Idempotent-Replayed"), want)
	}
	return nil
}

// keySecret mints a key: the first answer has its secret, a replay of
// the Idempotency-Key the key without it.
func keySecret(ctx context.Context, c *plinth.ClientWithResponses) error {
	params := &plinth.CreateKeyParams{IdempotencyKey: ptr("live-key")}
	body := plinth.CreateKeyRequest{Name: "live", Scopes: []string{"content:read"}}
	for i, want := range []bool{true, false} {
		res, err := c.CreateKeyWithResponse(ctx, params, body)
		if err != nil {
			return err
		}
		if res.StatusCode() != http.StatusCreated || res.JSON201 == nil {
			return fmt.Errorf("%d %s", res.StatusCode(), res.Body)
		}
		if err := replayed(res.HTTPResponse, i > 0); err != nil {
			return err
		}
		if got := res.JSON201.Secret != nil; got != want {
			return fmt.Errorf("answer %d: secret present %v, want %v: %s", i+1, got, want, res.Body)
		}
	}
	return nil
}

// webhookSecret creates an endpoint and rotates its secret: each first
// answer has the signing secret, each replay the endpoint without it.
func webhookSecret(ctx context.Context, c *plinth.ClientWithResponses) error {
	var id string
	for i, want := range []bool{true, false} {
		res, err := c.CreateWebhookEndpointWithResponse(ctx, &plinth.CreateWebhookEndpointParams{IdempotencyKey: ptr("live-endpoint")},
			plinth.CreateWebhookEndpointRequest{Url: ptr("https://hooks.example/in"), Events: []string{"content.changed"}})
		if err != nil {
			return err
		}
		if res.StatusCode() != http.StatusCreated || res.JSON201 == nil {
			return fmt.Errorf("create: %d %s", res.StatusCode(), res.Body)
		}
		if err := replayed(res.HTTPResponse, i > 0); err != nil {
			return err
		}
		if got := res.JSON201.SigningSecret != nil; got != want {
			return fmt.Errorf("create, answer %d: signing_secret present %v, want %v: %s", i+1, got, want, res.Body)
		}
		id = res.JSON201.Id
	}
	for i, want := range []bool{true, false} {
		res, err := c.RotateWebhookSecretWithResponse(ctx, id, &plinth.RotateWebhookSecretParams{IdempotencyKey: ptr("live-rotate")})
		if err != nil {
			return err
		}
		if res.StatusCode() != http.StatusOK || res.JSON200 == nil {
			return fmt.Errorf("rotate: %d %s", res.StatusCode(), res.Body)
		}
		if err := replayed(res.HTTPResponse, i > 0); err != nil {
			return err
		}
		if got := res.JSON200.SigningSecret != nil; got != want {
			return fmt.Errorf("rotate, answer %d: signing_secret present %v, want %v: %s", i+1, got, want, res.Body)
		}
	}
	return nil
}
