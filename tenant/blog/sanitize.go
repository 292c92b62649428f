package blog

import (
	"html"

	"github.com/microcosm-cc/bluemonday"
)

// contentPolicy is the HTML a stored post may carry: bluemonday's policy
// for user-generated content (no script, style, iframe or form; no on*
// attributes; links and images only with http, https or mailto URLs,
// links rel="nofollow"). Policies are safe for concurrent use.
var contentPolicy = bluemonday.UGCPolicy()

// textPolicy keeps no markup at all.
var textPolicy = bluemonday.StrictPolicy()

// cleanHTML sanitises the HTML of a post's content.
func cleanHTML(s string) string { return contentPolicy.Sanitize(s) }

// cleanText makes a plain-text field (title, excerpt, meta title and
// description, category and tag names) free of markup while keeping its
// characters readable: tags are dropped and entities decoded until
// nothing changes, so markup hidden behind entities ("&lt;script&gt;")
// cannot survive either. What remains is text ("2 < 3" stays so), meant
// to be escaped by whoever renders it.
func cleanText(s string) string {
	for range 8 {
		next := html.UnescapeString(textPolicy.Sanitize(s))
		if next == s {
			return s
		}
		s = next
	}
	return textPolicy.Sanitize(s) // pathologically nested entities: keep them escaped
}
