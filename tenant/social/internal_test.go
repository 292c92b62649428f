package social

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCompose(t *testing.T) {
	text := "Fresh sourdough every morning at the new downtown bakery"
	if got := compose(text, []string{"#bread", "sour dough", " "}, 2200); got != text+"\n\n#bread #sourdough" {
		t.Fatalf("compose: %q", got)
	}
	// Hashtags go first when the limit is short, then the text is cut at a word.
	if got := compose(text, []string{"bread"}, len(text)); got != text {
		t.Fatalf("without tags: %q", got)
	}
	got := compose(strings.Repeat("word ", 100), nil, 280)
	if utf8.RuneCountInString(got) > 280 || !strings.HasSuffix(got, "…") || strings.HasSuffix(got, " …") {
		t.Fatalf("cut: %q (%d)", got, utf8.RuneCountInString(got))
	}
}

func TestMediaKinds(t *testing.T) {
	images, videos := splitMedia([]string{"https://a.test/x.JPG", "https://a.test/clip.MP4?sig=1", "https://a.test/y.webm", "https://a.test/page"})
	if len(images) != 2 || len(videos) != 2 || videos[0] != "https://a.test/clip.MP4?sig=1" {
		t.Fatalf("images %v videos %v", images, videos)
	}
}

func TestErrorText(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"Invalid OAuth access token","code":190}}`:              "Invalid OAuth access token",
		`{"error":"invalid_grant","error_description":"expired"}`:                    "invalid_grant: expired",
		`{"detail":"You are not allowed to create a Tweet with duplicate content."}`: "You are not allowed to create a Tweet with duplicate content.",
		`{"message":"Not enough permissions","status":403}`:                          "Not enough permissions",
		`<html>oops</html>`: "502 Bad Gateway",
	} {
		if got := errorText([]byte(body), "502 Bad Gateway"); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
	if got := errorText([]byte(`{"message":"`+strings.Repeat("x", 500)+`"}`), ""); len(got) != maxErrorText {
		t.Errorf("not bounded: %d", len(got))
	}
}
