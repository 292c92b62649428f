package sites

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/content"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// Bounds of a website request.
const (
	maxBrief     = 5000
	maxPages     = 10 // pages asked for beyond the standard ones
	maxPageTitle = 60
	maxIndustry  = 100
	// translateChunk bounds the texts of one translation call, so a large
	// site is not one huge answer the model may cut short.
	translateChunk = 100
)

// WebsiteSteps are the steps of website.generate, in order.
var WebsiteSteps = []string{"plan", "brand", "pages", "components", "content", "translate"}

// websiteRequest is the body of POST /websites/generate.
type websiteRequest struct {
	Brief           *string   `json:"brief" required:"true"`
	Pages           *[]string `json:"pages"`
	LanguageCode    *string   `json:"language_code"`
	TargetLanguages *[]string `json:"target_languages"`
	Industry        *string   `json:"industry"`
	Tone            *string   `json:"tone"`
}

// websiteArgs are the arguments of a website.generate job.
type websiteArgs struct {
	Brief           string   `json:"brief"`
	Pages           []string `json:"pages"`
	Language        string   `json:"language"`
	TargetLanguages []string `json:"target_languages"`
	Industry        string   `json:"industry"`
	Tone            string   `json:"tone"`
}

// PageRef names one page of a generated site.
type PageRef struct {
	ID   int64  `json:"id"`
	Slug string `json:"slug"`
}

// WebsiteResult is a website.generate job's result (decisions.md): the
// site's pages, how many content keys they read and how many components
// it has (kept owner edits included).
type WebsiteResult struct {
	Pages       []PageRef `json:"pages"`
	ContentKeys int       `json:"content_keys"`
	Components  int       `json:"components"`
}

// submitWebsite is POST /websites/generate: website.generate, 200
// credits plus 7 per target language. Without target_languages the site
// is made in the project's target languages too.
func (sv *Service) submitWebsite(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req websiteRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	p := s.Project
	a := websiteArgs{Brief: *req.Brief, Pages: []string{}, Language: p.DefaultLanguage}
	var v httpapi.Validator
	checkText(&v, "brief", &a.Brief, maxBrief, true)
	if req.LanguageCode != nil {
		a.Language = *req.LanguageCode
		checkLanguage(&v, "language_code", a.Language)
	}
	if req.TargetLanguages != nil {
		a.TargetLanguages = *req.TargetLanguages
		v.Check(len(a.TargetLanguages) <= maxLanguages, "target_languages", fmt.Sprintf("must list at most %d language codes", maxLanguages))
		seen := map[string]bool{}
		for _, l := range a.TargetLanguages {
			checkLanguage(&v, "target_languages", l)
			v.Check(l != a.Language, "target_languages", fmt.Sprintf("%q is the site's own language", l))
			v.Check(!seen[l], "target_languages", fmt.Sprintf("%q is listed twice", l))
			seen[l] = true
		}
	} else {
		for _, l := range p.TargetLanguages {
			if l != a.Language {
				a.TargetLanguages = append(a.TargetLanguages, l)
			}
		}
	}
	if a.TargetLanguages == nil {
		a.TargetLanguages = []string{}
	}
	if req.Pages != nil {
		v.Check(len(*req.Pages) <= maxPages, "pages", fmt.Sprintf("must list at most %d pages", maxPages))
		for _, t := range *req.Pages {
			checkText(&v, "pages", &t, maxPageTitle, true)
			a.Pages = append(a.Pages, t)
		}
	}
	if req.Industry != nil {
		a.Industry = *req.Industry
		checkText(&v, "industry", &a.Industry, maxIndustry, false)
	}
	if req.Tone != nil {
		a.Tone = *req.Tone
		checkText(&v, "tone", &a.Tone, maxTone, false)
	}
	if err := v.Err(); err != nil {
		return err
	}
	charges := []jobs.Charge{{Op: "website", Cost: WebsiteCost}}
	for range a.TargetLanguages {
		charges = append(charges, jobs.Charge{Op: "translate_language", Cost: TranslateLanguageCost})
	}
	job, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (jobs.Job, error) {
		return jobs.Submit(r.Context(), tx, s, sv.river, jobs.Spec{
			Type: TypeWebsite, Args: a, Charges: charges, Steps: WebsiteSteps, WriteScope: "content:write",
		})
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusAccepted, job)
}

// object is a strict JSON Schema object of props, all required (what
// structured outputs want).
func object(props map[string]any) map[string]any {
	req := make([]string, 0, len(props))
	for k := range props {
		req = append(req, k)
	}
	slices.Sort(req)
	return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

func str(maxLen int) map[string]any { return map[string]any{"type": "string", "maxLength": maxLen} }

// hexColor is a colour as the brand stores it.
const hexColor = `^#[0-9a-fA-F]{6}$`

// typefaces are the fonts a generated brand picks from: common web
// fonts, so a site can load every one of them.
var typefaces = []any{"Inter", "Roboto", "Open Sans", "Lato", "Montserrat", "Poppins", "Merriweather", "Playfair Display",
	"Lora", "Source Serif Pro", "Nunito", "Raleway"}

// sectionKinds are the kinds of page section a generated page is made of.
var sectionKinds = []any{"hero", "text", "features", "testimonials", "faq", "cta", "contact"}

// Schemas of the structured answers the generation asks for.
var (
	sitePlanSchema = object(map[string]any{
		"site_name": map[string]any{"type": "string", "minLength": 1, "maxLength": 100},
		"offering":  map[string]any{"type": "string", "enum": []any{"services", "products"}},
		"extra_pages": map[string]any{"type": "array", "maxItems": 2, "items": object(map[string]any{
			"title": map[string]any{"type": "string", "minLength": 1, "maxLength": maxPageTitle},
		})},
	})
	brandSchema = object(map[string]any{
		"tagline":     str(160),
		"description": str(1000),
		"voice":       str(300),
		"audience":    str(300),
		"colors": object(map[string]any{
			"primary": map[string]any{"type": "string", "pattern": hexColor}, "secondary": map[string]any{"type": "string", "pattern": hexColor},
			"accent": map[string]any{"type": "string", "pattern": hexColor}, "background": map[string]any{"type": "string", "pattern": hexColor},
			"text": map[string]any{"type": "string", "pattern": hexColor},
		}),
		"fonts": object(map[string]any{
			"heading": map[string]any{"type": "string", "enum": typefaces}, "body": map[string]any{"type": "string", "enum": typefaces},
		}),
	})
	pageSchema = object(map[string]any{
		"title":            map[string]any{"type": "string", "minLength": 1, "maxLength": 80},
		"meta_title":       str(60),
		"meta_description": str(160),
		"sections": map[string]any{"type": "array", "minItems": 2, "maxItems": 5, "items": object(map[string]any{
			"kind":    map[string]any{"type": "string", "enum": sectionKinds},
			"heading": str(100),
			"body":    str(1200),
			"items": map[string]any{"type": "array", "maxItems": 6, "items": object(map[string]any{
				"title": str(80), "text": str(300),
			})},
		})},
	})
	componentsSchema = object(map[string]any{
		"header_button": str(40),
		"footer_text":   str(300),
		"hero_heading":  str(100),
		"hero_body":     str(400),
		"hero_button":   str(40),
		"cta_heading":   str(100),
		"cta_body":      str(300),
		"cta_button":    str(40),
	})
)

type sitePlan struct {
	SiteName   string `json:"site_name"`
	Offering   string `json:"offering"`
	ExtraPages []struct {
		Title string `json:"title"`
	} `json:"extra_pages"`
}

type brandAnswer struct {
	Tagline     string            `json:"tagline"`
	Description string            `json:"description"`
	Voice       string            `json:"voice"`
	Audience    string            `json:"audience"`
	Colors      map[string]string `json:"colors"`
	Fonts       map[string]string `json:"fonts"`
}

type pageAnswer struct {
	Title           string `json:"title"`
	MetaTitle       string `json:"meta_title"`
	MetaDescription string `json:"meta_description"`
	Sections        []struct {
		Kind    string `json:"kind"`
		Heading string `json:"heading"`
		Body    string `json:"body"`
		Items   []struct {
			Title string `json:"title"`
			Text  string `json:"text"`
		} `json:"items"`
	} `json:"sections"`
}

type componentsAnswer struct {
	HeaderButton string `json:"header_button"`
	FooterText   string `json:"footer_text"`
	HeroHeading  string `json:"hero_heading"`
	HeroBody     string `json:"hero_body"`
	HeroButton   string `json:"hero_button"`
	CTAHeading   string `json:"cta_heading"`
	CTABody      string `json:"cta_body"`
	CTAButton    string `json:"cta_button"`
}

// plannedPage is a page the site will have.
type plannedPage struct {
	Slug, Path, Title, Purpose string
}

// standardPages are the pages every generated site has; offering is
// services or products.
func standardPages(offering string) []plannedPage {
	if offering != "products" {
		offering = "services"
	}
	return []plannedPage{
		{"home", "/", "Home", "the home page: what the business offers and why to choose it"},
		{"about", "/about", "About", "the story, the people and the values behind the business"},
		{offering, "/" + offering, strings.ToUpper(offering[:1]) + offering[1:], "the " + offering + " the business offers, each with what it brings"},
		{"contact", "/contact", "Contact", "how to reach the business: address, hours, phone and a contact form"},
	}
}

// planPages lists the site's pages: the standard ones, those the model
// saw in the brief, and those the caller asked for, each slug once.
func planPages(plan sitePlan, asked []string) []plannedPage {
	pages := standardPages(plan.Offering)
	used := map[string]bool{}
	for _, p := range pages {
		used[p.Slug] = true
	}
	add := func(title string) {
		title = truncate(strings.TrimSpace(title), maxPageTitle)
		s := slug.Make(title)
		if len(s) > maxPageTitle {
			s = strings.Trim(s[:maxPageTitle], "-")
		}
		if title == "" || used[s] {
			return
		}
		used[s] = true
		pages = append(pages, plannedPage{Slug: s, Path: "/" + s, Title: title, Purpose: title})
	}
	for _, e := range plan.ExtraPages {
		add(e.Title)
	}
	for _, t := range asked {
		add(t)
	}
	return pages
}

// websiteJob writes the site with the AI provider, outside any
// transaction, into a generated site; its Commit writes the site in the
// transaction that completes the job, so a job killed mid-way writes
// nothing and its retry writes the site once.
func (sv *Service) websiteJob(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
	var a websiteArgs
	if err := run.Decode(&a); err != nil {
		return nil, jobs.Fail(jobs.CodeInvalid, "the job's arguments are unreadable: "+err.Error())
	}
	p := run.Scope.Project
	about := a.Brief
	if ind := strings.TrimSpace(a.Industry); ind != "" {
		about += "\n" + ind
	} else if p.Industry != "" {
		about += "\n" + p.Industry
	}
	system := fmt.Sprintf("You write the website of a business, in the language with code %s. The owner's brief follows.", a.Language)
	if a.Tone != "" {
		system += " Tone: " + a.Tone + "."
	}
	ask := func(name, task, prompt string, schema map[string]any, out any) error {
		return sv.ai.JSON(ctx, ai.JSONRequest{System: system + " " + task, Prompt: prompt, Name: name, Schema: schema}, out)
	}

	if err := run.Step(ctx, "plan", 5, "Planning the site"); err != nil {
		return nil, err
	}
	var plan sitePlan
	if err := ask("site_plan", "Name the business, say whether it sells services or products, "+
		"and list at most two pages the brief calls for beyond home, about, services or products, and contact.", about, sitePlanSchema, &plan); err != nil {
		return nil, err
	}
	pages := planPages(plan, a.Pages)
	g := newSite(a.Language, pages)
	g.brand.Name = truncate(strings.TrimSpace(plan.SiteName), content.MaxNameLen)
	if g.brand.Name == "" {
		g.brand.Name = p.Name
	}

	if err := run.Step(ctx, "brand", 15, "Defining the brand"); err != nil {
		return nil, err
	}
	var br brandAnswer
	if err := ask("brand", "Describe the brand of "+g.brand.Name+": tagline, description, voice, audience, colours and fonts.", about, brandSchema, &br); err != nil {
		return nil, err
	}
	g.setBrand(br)

	if err := run.Step(ctx, "pages", 25, "Writing the pages"); err != nil {
		return nil, err
	}
	for i, pg := range pages {
		if err := run.Progress(ctx, 25+35*i/len(pages), "Writing the page "+pg.Title); err != nil {
			return nil, err
		}
		var ans pageAnswer
		task := fmt.Sprintf("Write the page %q of %s (%s): its title, search metadata and sections.", pg.Title, g.brand.Name, pg.Purpose)
		if err := ask("page", task, about+"\n"+pg.Title, pageSchema, &ans); err != nil {
			return nil, err
		}
		g.addPage(pg, ans)
	}

	if err := run.Step(ctx, "components", 60, "Writing the shared components"); err != nil {
		return nil, err
	}
	var comp componentsAnswer
	if err := ask("components", "Write the texts of the header, footer, hero and call-to-action blocks shared by every page of "+g.brand.Name+".",
		about, componentsSchema, &comp); err != nil {
		return nil, err
	}
	g.addComponents(comp)

	if err := run.Step(ctx, "content", 70, "Collecting the content keys"); err != nil {
		return nil, err
	}
	if err := g.check(); err != nil {
		return nil, err
	}

	if err := run.Step(ctx, "translate", 75, "Translating the site"); err != nil {
		return nil, err
	}
	for i, lang := range a.TargetLanguages {
		if err := run.Progress(ctx, 75+20*i/len(a.TargetLanguages), "Translating into "+lang); err != nil {
			return nil, err
		}
		texts := g.texts()
		out := make([]string, 0, len(texts))
		for start := 0; start < len(texts); start += translateChunk {
			chunk := texts[start:min(start+translateChunk, len(texts))]
			tr, err := sv.ai.Translate(ctx, ai.TranslateRequest{From: a.Language, To: lang, Texts: chunk, Context: g.brand.Name + ": " + truncate(a.Brief, 300)})
			if err != nil {
				return nil, err
			}
			if len(tr) != len(chunk) {
				return nil, &ai.UpstreamError{Status: 200, Attempts: 1, Msg: fmt.Sprintf("asked for %d translations, got %d", len(chunk), len(tr))}
			}
			out = append(out, tr...)
		}
		g.addTranslation(lang, out)
	}

	return func(ctx context.Context, tx pgx.Tx) (any, error) {
		return sv.commitSite(ctx, tx, run.Scope, run.JobID, g)
	}, nil
}

// site is a generated website before it is written: the brand, the
// components and pages as their routes take them, and every content
// value in every language.
type site struct {
	lang       string
	brand      brandFields
	components []genComponent
	pages      []genPage
	values     []genValue // the default language's first, in key order of creation
	keys       []string   // distinct keys, in order of creation
}

// brandFields are the brand context fields the generation writes (the
// logo is the owner's).
type brandFields struct {
	Name, Tagline, Description, Voice, Audience string
	Colors, Fonts                               map[string]string
}

type genComponent struct {
	Slug, Name string
	Props      map[string]any
}

type genPage struct {
	plannedPage
	Title, MetaTitle, MetaDescription string
	Sections                          []map[string]any
	Translations                      []content.PageTranslation
}

type genValue struct{ Key, Lang, Value string }

func newSite(lang string, pages []plannedPage) *site {
	g := &site{lang: lang}
	for _, p := range pages {
		g.pages = append(g.pages, genPage{plannedPage: p})
	}
	return g
}

// value adds key's text in the default language and returns key.
func (g *site) value(key, text string) string {
	g.keys = append(g.keys, key)
	g.values = append(g.values, genValue{Key: key, Lang: g.lang, Value: strings.TrimSpace(text)})
	return key
}

func (g *site) setBrand(b brandAnswer) {
	g.brand.Tagline, g.brand.Description, g.brand.Voice, g.brand.Audience = b.Tagline, b.Description, b.Voice, b.Audience
	g.brand.Colors, g.brand.Fonts = b.Colors, b.Fonts
	g.value("site.name", g.brand.Name)
	g.value("site.tagline", b.Tagline)
}

// nav is the site's navigation: each page's label key and path.
func (g *site) nav() []map[string]any {
	out := make([]map[string]any, len(g.pages))
	for i, p := range g.pages {
		out[i] = map[string]any{"label_key": "nav." + p.Slug, "path": p.Path}
	}
	return out
}

// addPage records page pg as the model wrote it: its texts become content
// keys page.{slug}.{n}.…, its sections point at them. The home page opens
// with the hero component and every page but contact closes with the
// call to action.
func (g *site) addPage(pg plannedPage, ans pageAnswer) {
	i := slices.IndexFunc(g.pages, func(p genPage) bool { return p.Slug == pg.Slug })
	p := &g.pages[i]
	p.Title = truncate(strings.TrimSpace(ans.Title), content.MaxNameLen)
	if p.Title == "" {
		p.Title = pg.Title
	}
	p.MetaTitle, p.MetaDescription = strings.TrimSpace(ans.MetaTitle), strings.TrimSpace(ans.MetaDescription)
	g.value("nav."+pg.Slug, pg.Title)
	p.Sections = []map[string]any{}
	if pg.Slug == "home" {
		p.Sections = append(p.Sections, map[string]any{"type": "hero", "component": "hero"})
	}
	for n, sec := range ans.Sections {
		base := fmt.Sprintf("page.%s.%d.", pg.Slug, n+1)
		s := map[string]any{"type": sec.Kind,
			"heading_key": g.value(base+"heading", sec.Heading),
			"body_key":    g.value(base+"body", sec.Body)}
		items := []map[string]any{}
		for m, it := range sec.Items {
			ib := base + "items." + strconv.Itoa(m+1) + "."
			items = append(items, map[string]any{"title_key": g.value(ib+"title", it.Title), "text_key": g.value(ib+"text", it.Text)})
		}
		s["items"] = items
		p.Sections = append(p.Sections, s)
	}
	if pg.Slug != "contact" {
		p.Sections = append(p.Sections, map[string]any{"type": "cta", "component": "cta"})
	}
}

// addComponents records the header, footer, hero and call to action.
func (g *site) addComponents(c componentsAnswer) {
	button := func(key, text string) map[string]any {
		return map[string]any{"label_key": g.value(key, text), "path": "/contact"}
	}
	g.components = []genComponent{
		{Slug: "header", Name: "Header", Props: map[string]any{"logo_key": "site.name", "nav": g.nav(),
			"button": button("component.header.button", c.HeaderButton)}},
		{Slug: "footer", Name: "Footer", Props: map[string]any{"text_key": g.value("component.footer.text", c.FooterText),
			"tagline_key": "site.tagline", "links": g.nav()}},
		{Slug: "hero", Name: "Hero", Props: map[string]any{"heading_key": g.value("component.hero.heading", c.HeroHeading),
			"body_key": g.value("component.hero.body", c.HeroBody), "button": button("component.hero.button", c.HeroButton)}},
		{Slug: "cta", Name: "Call to action", Props: map[string]any{"heading_key": g.value("component.cta.heading", c.CTAHeading),
			"body_key": g.value("component.cta.body", c.CTABody), "button": button("component.cta.button", c.CTAButton)}},
	}
}

// check refuses a site whose keys the content pillar would refuse, before
// any translation is paid for (a key is made of page slugs, so this is a
// bug, not the model's fault).
func (g *site) check() error {
	for _, k := range g.keys {
		if !content.ValidKey(k) {
			return fmt.Errorf("sites: generated content key %q is not valid", k)
		}
	}
	return nil
}

// texts are the default language's texts to translate, in a fixed order:
// the values, then each page's title, meta title and meta description.
func (g *site) texts() []string {
	var out []string
	for _, v := range g.values {
		if v.Lang == g.lang {
			out = append(out, v.Value)
		}
	}
	for _, p := range g.pages {
		out = append(out, p.Title, p.MetaTitle, p.MetaDescription)
	}
	return out
}

// addTranslation records lang's translation of texts().
func (g *site) addTranslation(lang string, tr []string) {
	i := 0
	n := len(g.values)
	for _, v := range g.values[:n] {
		if v.Lang != g.lang {
			continue
		}
		g.values = append(g.values, genValue{Key: v.Key, Lang: lang, Value: strings.TrimSpace(tr[i])})
		i++
	}
	for k := range g.pages {
		p := &g.pages[k]
		p.Translations = append(p.Translations, content.PageTranslation{Lang: lang, Title: truncate(strings.TrimSpace(tr[i]), content.MaxNameLen),
			SEO: content.SEO{MetaTitle: strings.TrimSpace(tr[i+1]), MetaDescription: strings.TrimSpace(tr[i+2])}})
		i += 3
	}
}

// pageRequest is the page as POST and PATCH /pages take it: published,
// so the site serves it at once (GET /v1/public/pages/{slug}).
func (p genPage) request() content.PageRequest {
	sections := make([]json.RawMessage, len(p.Sections))
	for i, s := range p.Sections {
		sections[i], _ = json.Marshal(s)
	}
	status := content.PagePublished
	title, sl, path := p.Title, p.Slug, p.Path
	mt, md := p.MetaTitle, p.MetaDescription
	tr := make([]content.TranslationIn, len(p.Translations))
	for i, t := range p.Translations {
		tr[i] = content.TranslationIn{Lang: &t.Lang, Title: &t.Title, SEO: &content.SEOIn{MetaTitle: &t.SEO.MetaTitle, MetaDescription: &t.SEO.MetaDescription}}
	}
	return content.PageRequest{Title: &title, Slug: &sl, Path: &path, Status: &status, Sections: &sections,
		SEO: &content.SEOIn{MetaTitle: &mt, MetaDescription: &md}, Translations: &tr}
}

// request is the component as POST and PATCH /components take it: its
// texts are content keys, so it has no per-language props.
func (c genComponent) request() content.ComponentRequest {
	props, _ := json.Marshal(c.Props)
	raw := json.RawMessage(props)
	name, sl := c.Name, c.Slug
	tr := map[string]json.RawMessage{}
	return content.ComponentRequest{Name: &name, Slug: &sl, Props: &raw, Translations: &tr}
}

// request is the brand as PATCH /brand takes it.
func (b brandFields) request() content.BrandRequest {
	colors, fonts := b.Colors, b.Fonts
	if colors == nil {
		colors = map[string]string{}
	}
	if fonts == nil {
		fonts = map[string]string{}
	}
	name, tagline, desc, voice, audience := b.Name, b.Tagline, b.Description, b.Voice, b.Audience
	return content.BrandRequest{Name: &name, Tagline: &tagline, Description: &desc, Voice: &voice, Audience: &audience,
		Colors: &colors, Fonts: &fonts}
}
