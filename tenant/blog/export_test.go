package blog

import (
	"context"

	"github.com/plinth-dev/plinth/tenant"
)

// ReadPostTags reads the post ref names as GET /blog-posts/{ref} does
// (with has_draft) and
// answers the languages of its texts and the slugs of its tags, for the
// round-trip test.
func ReadPostTags(ctx context.Context, s *tenant.Scope, ref string) (langs, tags []string, err error) {
	p, err := readPost(ctx, s, ref, true)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range p.Texts {
		langs = append(langs, t.Lang)
	}
	for _, t := range p.Tags {
		tags = append(tags, t.Slug)
	}
	return langs, tags, nil
}
