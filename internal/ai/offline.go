package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Offline is the built-in provider: deterministic, derived from its input
// and needing no network or account. The same request always gives the
// same answer, so tests and a newcomer's machine behave alike.
type Offline struct{}

// Name implements Provider.
func (Offline) Name() string { return "offline" }

// Text writes prose about the prompt's own words.
func (o Offline) Text(ctx context.Context, req TextRequest) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	words := 120
	if req.MaxTokens > 0 {
		words = max(req.MaxTokens*3/4, 12)
	}
	g := newGen("text", req.Prompt)
	var paras []string
	var cur []string
	n := 0
	for n < words {
		s := g.sentence()
		cur = append(cur, s)
		n += len(strings.Fields(s))
		if len(cur) == 4 {
			paras = append(paras, strings.Join(cur, " "))
			cur = nil
		}
	}
	if len(cur) > 0 {
		paras = append(paras, strings.Join(cur, " "))
	}
	return strings.Join(paras, "\n\n"), nil
}

// JSON builds a value that matches req.Schema, its strings drawn from the
// prompt's words.
func (o Offline) JSON(ctx context.Context, req JSONRequest, out any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g := newGen("json:"+req.Name, req.Prompt)
	v := g.fill(req.Schema, req.Name, 0)
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// Translate marks each text with the target language (pseudo-translation):
// "[fr] Welcome". Real translation needs a real provider; the marker keeps
// offline output visibly derived from its input and distinct per language.
func (o Offline) Translate(ctx context.Context, req TranslateRequest) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]string, len(req.Texts))
	for i, t := range req.Texts {
		if strings.TrimSpace(t) == "" {
			out[i] = t
			continue
		}
		out[i] = "[" + req.To + "] " + t
	}
	return out, nil
}

// Image draws a PNG whose colours and shapes come from the prompt.
func (o Offline) Image(ctx context.Context, req ImageRequest) (*Image, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, h := req.Width, req.Height
	if w <= 0 {
		w = 1024
	}
	if h <= 0 {
		h = 1024
	}
	seed := hash64("image", req.Prompt)
	r := rand.New(rand.NewPCG(seed, seed>>1|1))
	c1 := hsv(r.Float64()*360, 0.55, 0.95)
	c2 := hsv(r.Float64()*360, 0.65, 0.55)
	type disc struct {
		x, y, rad float64
		c         color.RGBA
	}
	discs := make([]disc, 3+r.IntN(5))
	for i := range discs {
		discs[i] = disc{x: r.Float64() * float64(w), y: r.Float64() * float64(h),
			rad: (0.08 + r.Float64()*0.25) * float64(min(w, h)), c: hsv(r.Float64()*360, 0.7, 0.9)}
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			t := (float64(x)/float64(w) + float64(y)/float64(h)) / 2
			px := mix(c1, c2, t)
			for _, d := range discs {
				dx, dy := float64(x)-d.x, float64(y)-d.y
				if dx*dx+dy*dy <= d.rad*d.rad {
					px = mix(px, d.c, 0.6)
				}
			}
			i := img.PixOffset(x, y)
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = px.R, px.G, px.B, 255
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		return nil, err
	}
	return &Image{Data: buf.Bytes(), ContentType: "image/png", Width: w, Height: h}, nil
}

func hash64(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

func mix(a, b color.RGBA, t float64) color.RGBA {
	l := func(x, y uint8) uint8 { return uint8(float64(x)*(1-t) + float64(y)*t) }
	return color.RGBA{l(a.R, b.R), l(a.G, b.G), l(a.B, b.B), 255}
}

func hsv(h, s, v float64) color.RGBA {
	c := v * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	m := v - c
	var r, g, b float64
	switch {
	case h < 60:
		r, g = c, x
	case h < 120:
		r, g = x, c
	case h < 180:
		g, b = c, x
	case h < 240:
		g, b = x, c
	case h < 300:
		r, b = x, c
	default:
		r, b = c, x
	}
	return color.RGBA{uint8((r + m) * 255), uint8((g + m) * 255), uint8((b + m) * 255), 255}
}

// stopwords are skipped when picking a prompt's keywords.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but for nor so yet of to in on at by with from into onto about over
		under this that these those is are was were be been being it its as than then there their them they we you your our
		write generate create make give some any all about please short long post article blog page website site words
		using use how what why when where which who whom whose will would should could can may might must very more most
		brief industry tone language pages sections plan`) {
		m[w] = true
	}
	return m
}()

// gen draws deterministic words and sentences from a prompt.
type gen struct {
	r        *rand.Rand
	keywords []string
	topic    string
}

func newGen(kind, prompt string) *gen {
	seed := hash64(kind, prompt)
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	seen := map[string]bool{}
	var topic []string
	for _, f := range strings.FieldsFunc(prompt, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' }) {
		w := strings.ToLower(strings.Trim(f, "-"))
		if len(topic) < 8 && w != "" {
			topic = append(topic, w)
		}
		if len([]rune(w)) < 3 || stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		g.keywords = append(g.keywords, w)
	}
	if len(g.keywords) == 0 {
		g.keywords = []string{"craft", "quality", "community"}
	}
	g.topic = strings.Join(g.keywords[:min(4, len(g.keywords))], " ")
	for _, w := range tradeWords(g.keywords) {
		if !seen[w] {
			seen[w] = true
			g.keywords = append(g.keywords, w)
		}
	}
	return g
}

// trades are the vocabularies of common kinds of business, each with the
// words of a prompt that name it: offline text about "a family bakery"
// then talks about bread and pastries, as a writer would, instead of only
// repeating the prompt's own words.
var trades = []struct{ names, words []string }{
	{[]string{"bakery", "bakeries", "baker", "bakers", "boulangerie", "patisserie", "pastry", "bread"},
		[]string{"bread", "sourdough", "pastries", "croissants", "oven", "flour", "loaves"}},
	{[]string{"restaurant", "bistro", "trattoria", "diner", "eatery", "brasserie"},
		[]string{"menu", "dishes", "chef", "seasonal", "ingredients", "dinner"}},
	{[]string{"cafe", "café", "coffee", "espresso", "roastery"},
		[]string{"coffee", "espresso", "beans", "brunch", "baristas"}},
	{[]string{"dentist", "dental", "orthodontist", "orthodontics"},
		[]string{"teeth", "smiles", "checkups", "hygiene", "patients"}},
	{[]string{"clinic", "doctor", "physiotherapy", "physio", "medical", "health"},
		[]string{"patients", "care", "treatment", "appointments", "wellbeing"}},
	{[]string{"plumber", "plumbers", "plumbing", "heating"},
		[]string{"pipes", "leaks", "boilers", "repairs", "installations"}},
	{[]string{"electrician", "electrical", "electricians"},
		[]string{"wiring", "lighting", "repairs", "safety", "installations"}},
	{[]string{"lawyer", "lawyers", "law", "legal", "attorney", "solicitor"},
		[]string{"clients", "advice", "contracts", "cases", "counsel"}},
	{[]string{"accountant", "accounting", "bookkeeping", "tax"},
		[]string{"taxes", "accounts", "bookkeeping", "returns", "advice"}},
	{[]string{"yoga", "pilates", "fitness", "gym", "trainer"},
		[]string{"classes", "training", "strength", "wellbeing", "instructors"}},
	{[]string{"photographer", "photography", "photo", "photos"},
		[]string{"portraits", "weddings", "shoots", "prints", "lighting"}},
	{[]string{"salon", "hair", "hairdresser", "barber", "beauty", "spa"},
		[]string{"haircuts", "styling", "treatments", "appointments", "colour"}},
	{[]string{"florist", "flowers", "flower", "floral"},
		[]string{"bouquets", "blooms", "arrangements", "weddings", "stems"}},
	{[]string{"hotel", "guesthouse", "inn", "hostel"},
		[]string{"rooms", "stays", "breakfast", "guests", "comfort"}},
	{[]string{"software", "saas", "app", "startup", "platform"},
		[]string{"product", "features", "teams", "integrations", "workflow"}},
	{[]string{"garden", "gardener", "gardening", "landscaping", "landscaper"},
		[]string{"lawns", "planting", "hedges", "design", "seasons"}},
	{[]string{"winery", "vineyard", "wine"},
		[]string{"wines", "vintage", "tastings", "grapes", "cellar"}},
	{[]string{"shop", "store", "boutique", "shoes", "clothing", "fashion"},
		[]string{"collection", "products", "styles", "delivery", "customers"}},
}

// tradeWords returns the vocabularies of the trades keywords name.
func tradeWords(keywords []string) []string {
	var out []string
	for _, t := range trades {
		for _, n := range t.names {
			if slices.Contains(keywords, n) {
				out = append(out, t.words...)
				break
			}
		}
	}
	return out
}

// hexColor is the pattern of a colour a schema asks for as #rrggbb.
const hexColor = `^#[0-9a-fA-F]{6}$`

func (g *gen) kw() string { return g.keywords[g.r.IntN(len(g.keywords))] }

var templates = []string{
	"%s shapes how people think about %s.",
	"A closer look at %s shows why %s matters.",
	"Good %s starts with a clear idea of %s.",
	"Many readers ask how %s connects to %s.",
	"The best results come when %s and %s work together.",
	"Here is what to know about %s before you explore %s.",
	"Small steps in %s lead to lasting gains in %s.",
	"%s is easier to understand once you see %s in practice.",
}

func (g *gen) sentence() string {
	s := fmt.Sprintf(templates[g.r.IntN(len(templates))], g.kw(), g.kw())
	return strings.ToUpper(s[:1]) + s[1:]
}

func (g *gen) title() string {
	n := min(len(g.keywords), 2+g.r.IntN(3))
	start := g.r.IntN(len(g.keywords) - n + 1)
	words := append([]string(nil), g.keywords[start:start+n]...)
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

func slugOf(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

// fill returns a value for schema; name is the property it fills, which
// steers the kind of string produced.
func (g *gen) fill(schema map[string]any, name string, depth int) any {
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[g.r.IntN(len(enum))]
	}
	typ, _ := schema["type"].(string)
	if ts, ok := schema["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	num := func(key string, def float64) float64 {
		if v, ok := schema[key].(float64); ok {
			return v
		}
		if v, ok := schema[key].(int); ok {
			return float64(v)
		}
		return def
	}
	switch typ {
	case "object":
		props, _ := schema["properties"].(map[string]any)
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		obj := make(map[string]any, len(keys))
		for _, k := range keys {
			sub, _ := props[k].(map[string]any)
			obj[k] = g.fill(sub, k, depth+1)
		}
		return obj
	case "array":
		items, _ := schema["items"].(map[string]any)
		n := int(num("minItems", 3))
		if n < 3 && schema["minItems"] == nil {
			n = 3
		}
		n = min(n, int(num("maxItems", float64(max(n, 3)))))
		arr := make([]any, n)
		for i := range arr {
			arr[i] = g.fill(items, strings.TrimSuffix(name, "s"), depth+1)
		}
		return arr
	case "integer":
		lo, hi := num("minimum", 1), num("maximum", 100)
		return int(lo) + g.r.IntN(int(max(hi-lo, 0))+1)
	case "number":
		lo, hi := num("minimum", 0), num("maximum", 100)
		return math.Round((lo+g.r.Float64()*(hi-lo))*100) / 100
	case "boolean":
		return g.r.IntN(2) == 1
	case "null":
		return nil
	}
	var s string
	n := strings.ToLower(name)
	switch {
	case schema["pattern"] == hexColor:
		c := hsv(g.r.Float64()*360, 0.35+g.r.Float64()*0.5, 0.25+g.r.Float64()*0.6)
		return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
	case strings.Contains(n, "slug"):
		s = slugOf(g.title())
	case strings.Contains(n, "url") || strings.Contains(n, "link"):
		s = "https://example.com/" + slugOf(g.title())
	case strings.Contains(n, "title") || strings.Contains(n, "name") || strings.Contains(n, "heading") ||
		strings.Contains(n, "button") || strings.Contains(n, "label"):
		s = g.title()
	case strings.Contains(n, "keyword") || strings.Contains(n, "tag"):
		s = g.kw()
	case strings.Contains(n, "content") || strings.Contains(n, "body") || strings.Contains(n, "text"):
		s = g.sentence() + " " + g.sentence() + " " + g.sentence()
	default:
		s = g.sentence()
	}
	if ml := int(num("maxLength", 0)); ml > 0 && len([]rune(s)) > ml {
		s = string([]rune(s)[:ml])
	}
	return s
}
