// Command send builds request bodies with the Go client oapi-codegen
// generates from central/openapi.json (package plinth, generated next to
// it by central's TestOpenAPIGoClient) and sends them to the URL it is
// given. Each request names its case in Idempotency-Key; the test server
// checks the request against the document and the body against the one
// the case intends.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/oapi-codegen/nullable"

	"plinth.test/openapiclient/plinth"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: send URL")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "send:", err)
		os.Exit(1)
	}
}

func ptr[T any](v T) *T { return &v }

// request is one case: its name and the call that sends it.
type request struct {
	name string
	send func(ctx context.Context, key *string) (*http.Response, error)
}

func run(ctx context.Context, url string) error {
	c, err := plinth.NewClient(url, plinth.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		if r.URL.Path != "/v1/public/forms/contact" {
			r.Header.Set("Authorization", "Bearer pln_live_00000000000000000000000000000000")
		}
		return nil
	}))
	if err != nil {
		return err
	}
	// A manual blog post leaves its type out; the other bodies name it (the
	// discriminator of the Typed unions, which From… writes).
	var blogManual, blogAI plinth.CreateBlogPostRequest
	if err := blogManual.FromCreateBlogPostUntyped(plinth.CreateBlogPostUntyped{Title: "Hello", Status: ptr(plinth.CreateBlogPostUntypedStatusDraft),
		TagIds: &[]int{1, 2}, FeaturedImage: ptr("https://img.example/a.png")}); err != nil {
		return err
	}
	var blogTyped plinth.CreateBlogPostTyped
	if err := blogTyped.FromCreateBlogPostAI(plinth.CreateBlogPostAI{Type: plinth.CreateBlogPostAITypeAi, Topic: "Green tea",
		TargetLanguages: &[]string{"fr", "de"}, Keywords: &[]string{"tea"}}); err != nil {
		return err
	}
	if err := blogAI.FromCreateBlogPostTyped(blogTyped); err != nil {
		return err
	}
	var socialManual, socialAI plinth.CreateSocialPostRequest
	var manualTyped, aiTyped plinth.CreateSocialPostTyped
	if err := manualTyped.FromCreateSocialPostManual(plinth.CreateSocialPostManual{Type: plinth.CreateSocialPostManualTypeManual, Title: "Launch",
		Content: ptr("We are live"), Platforms: &[]plinth.SocialPlatform{plinth.SocialPlatformTwitter, plinth.SocialPlatformLinkedin},
		ScheduledAt: ptr(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))}); err != nil {
		return err
	}
	if err := socialManual.FromCreateSocialPostTyped(manualTyped); err != nil {
		return err
	}
	if err := aiTyped.FromCreateSocialPostAI(plinth.CreateSocialPostAI{Type: plinth.CreateSocialPostAITypeAi, Topic: "Launch day",
		Platforms: &[]plinth.SocialPlatform{plinth.SocialPlatformInstagram}, Images: ptr(2), Tone: ptr("warm")}); err != nil {
		return err
	}
	if err := socialAI.FromCreateSocialPostTyped(aiTyped); err != nil {
		return err
	}
	var budget, topics plinth.FormFieldValue
	var budgetValue, web, seo plinth.FormFieldScalar
	if err := budgetValue.FromFormFieldScalar1(5000); err != nil {
		return err
	}
	if err := budget.FromFormFieldScalar(budgetValue); err != nil {
		return err
	}
	if err := web.FromFormFieldScalar0("web"); err != nil {
		return err
	}
	if err := seo.FromFormFieldScalar0("seo"); err != nil {
		return err
	}
	if err := topics.FromFormFieldValue1(plinth.FormFieldValue1{nullable.NewNullableWithValue(web), nullable.NewNullableWithValue(seo)}); err != nil {
		return err
	}

	requests := []request{
		{"blog-manual", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.CreateBlogPost(ctx, &plinth.CreateBlogPostParams{IdempotencyKey: key}, blogManual)
		}},
		{"blog-ai", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.CreateBlogPost(ctx, &plinth.CreateBlogPostParams{IdempotencyKey: key}, blogAI)
		}},
		{"social-manual", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.CreateSocialPost(ctx, &plinth.CreateSocialPostParams{IdempotencyKey: key}, socialManual)
		}},
		{"social-ai", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.CreateSocialPost(ctx, &plinth.CreateSocialPostParams{IdempotencyKey: key}, socialAI)
		}},
		{"social-unschedule", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.UpdateSocialPost(ctx, 7, &plinth.UpdateSocialPostParams{IdempotencyKey: key},
				plinth.UpdateSocialPostRequest{ScheduledAt: nullable.NewNullNullable[time.Time]()})
		}},
		{"blog-clear", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.UpdateBlogPost(ctx, "7", &plinth.UpdateBlogPostParams{IdempotencyKey: key},
				plinth.UpdateBlogPostRequest{CategoryId: nullable.NewNullNullable[int](), FeaturedImage: nullable.NewNullNullable[string]()})
		}},
		{"product-clear", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.UpdateProduct(ctx, 3, &plinth.UpdateProductParams{IdempotencyKey: key}, plinth.UpdateProductRequest{
				CompareAtPrice: nullable.NewNullNullable[int](), Weight: nullable.NewNullNullable[float64](), CategoryId: nullable.NewNullNullable[int]()})
		}},
		{"image", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.CreateImage(ctx, &plinth.CreateImageParams{IdempotencyKey: key}, plinth.GenerateImageRequest{Prompt: "A lighthouse at dawn"})
		}},
		{"content-batch", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.PutContentBatch(ctx, &plinth.PutContentBatchParams{IdempotencyKey: key}, plinth.PutContentBatchRequest{Updates: []plinth.ContentUpdate{
				{Key: "home.title", Value: "Welcome"}, {Key: "home.title", Value: "Bienvenue", Lang: ptr("fr")}}})
		}},
		{"component", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.CreateComponent(ctx, &plinth.CreateComponentParams{IdempotencyKey: key}, plinth.CreateComponentRequest{Name: "Hero",
				Props:        &map[string]any{"heading": "Hi", "cta": map[string]any{"label": "Go", "href": "/go"}, "count": 3},
				Translations: &map[string]map[string]any{"fr": {"heading": "Salut"}}})
		}},
		{"page", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.CreatePage(ctx, &plinth.CreatePageParams{IdempotencyKey: key}, plinth.CreatePageRequest{Title: "About", Path: ptr("/about"),
				Sections:     &[]map[string]any{{"type": "hero", "title": "About us"}},
				Seo:          &plinth.PageSEOInput{MetaTitle: ptr("About"), Noindex: ptr(false)},
				Translations: &[]plinth.PageTranslationInput{{Lang: "fr", Title: ptr("À propos")}}})
		}},
		{"product", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.CreateProduct(ctx, &plinth.CreateProductParams{IdempotencyKey: key}, plinth.CreateProductRequest{Name: "Mug", Price: 1299,
				Metadata: &map[string]any{"material": "clay", "sizes": []int{1, 2}}, Weight: nullable.NewNullableWithValue(0.25),
				Variants: &[]plinth.CreateProductVariantRequest{{Name: "Blue", Options: &map[string]string{"color": "blue"}}}})
		}},
		{"checkout", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.CreateCheckoutSession(ctx, &plinth.CreateCheckoutSessionParams{IdempotencyKey: key}, plinth.CreateCheckoutSessionRequest{
				Items: []plinth.OrderItemInput{{ProductId: 1, Quantity: 2}}, Customer: &plinth.CustomerInput{Email: ptr("a@b.co")},
				SuccessUrl: "https://shop.example/ok", CancelUrl: "https://shop.example/cancel"})
		}},
		{"booking-settings", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.UpdateBookingSettings(ctx, &plinth.UpdateBookingSettingsParams{IdempotencyKey: key}, plinth.UpdateBookingSettingsRequest{
				Timezone:    nullable.NewNullNullable[string](),
				WeeklyHours: &plinth.BookingWeekPatch{Mon: nullable.NewNullableWithValue([][]string{{"09:00", "12:00"}}), Sun: nullable.NewNullNullable[[][]string]()}})
		}},
		{"contact", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.SubmitContact(ctx, &plinth.SubmitContactParams{IdempotencyKey: key, XServiceProjectKey: ptr("prj_000000000000000000000000")},
				plinth.SubmitContactRequest{Name: "Ada", Email: "ada@example.com", Message: "Hi",
					Fields: &map[string]plinth.FormFieldValue{"budget": budget, "topics": topics}})
		}},
		{"webhook", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.CreateWebhookEndpoint(ctx, &plinth.CreateWebhookEndpointParams{IdempotencyKey: key},
				plinth.CreateWebhookEndpointRequest{Url: ptr("https://hooks.example/in"), Events: []string{"content.changed"}})
		}},
		{"key", func(ctx context.Context, key *string) (*http.Response, error) {
			return c.CreateKey(ctx, &plinth.CreateKeyParams{IdempotencyKey: key}, plinth.CreateKeyRequest{Name: "ci", Scopes: []string{"content:read"}})
		}},
	}
	for _, r := range requests {
		res, err := r.send(ctx, ptr(r.name))
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			return fmt.Errorf("%s: the server answered %s", r.name, res.Status)
		}
	}
	return nil
}
