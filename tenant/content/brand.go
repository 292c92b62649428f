package content

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// LogoKey is the media key the brand logo is served under
// (/v1/public/media/{project}/_logo); no image key can spell it.
const LogoKey = "_logo"

// Brand is the brand context resource.
type Brand struct {
	Name        string            `json:"name"`
	Tagline     string            `json:"tagline"`
	Description string            `json:"description"`
	Voice       string            `json:"voice"`
	Audience    string            `json:"audience"`
	Colors      map[string]string `json:"colors"`
	Fonts       map[string]string `json:"fonts"`
	LogoURL     *string           `json:"logo_url"`
	UpdatedAt   time.Time         `json:"updated_at"`
	// HasDraft says whether the brand has unpublished changes (a draft);
	// authenticated reads only (the public surface answers PublicBrand).
	HasDraft *bool `json:"has_draft,omitempty"`
}

// BrandRequest is the body of PATCH /brand: fields sent replace the stored
// ones (colors and fonts whole).
type BrandRequest struct {
	Name        *string            `json:"name"`
	Tagline     *string            `json:"tagline"`
	Description *string            `json:"description"`
	Voice       *string            `json:"voice"`
	Audience    *string            `json:"audience"`
	Colors      *map[string]string `json:"colors"`
	Fonts       *map[string]string `json:"fonts"`
	// Draft and Autosave: as the query parameters of the same names
	// (drafts.Mode).
	Draft    *bool `json:"draft"`
	Autosave *bool `json:"autosave"`
}

// Brand limits.
const (
	maxBrandText = 5000
	maxBrandMap  = 50
	maxMapKey    = 64
	maxMapValue  = 255
)

func checkText(v *httpapi.Validator, field string, s *string, max int) {
	if s != nil {
		v.Check(utf8.RuneCountInString(*s) <= max, field, fmt.Sprintf("must be at most %d characters", max))
	}
}

func checkMap(v *httpapi.Validator, field string, m *map[string]string) []byte {
	if m == nil {
		return nil
	}
	v.Check(len(*m) <= maxBrandMap, field, fmt.Sprintf("must hold at most %d entries", maxBrandMap))
	for k, val := range *m {
		v.Check(k != "" && utf8.RuneCountInString(k) <= maxMapKey, field, fmt.Sprintf("names must be 1 to %d characters", maxMapKey))
		v.Check(utf8.RuneCountInString(val) <= maxMapValue, field+"."+k, fmt.Sprintf("must be at most %d characters", maxMapValue))
	}
	if *m == nil {
		return []byte("{}")
	}
	b, _ := json.Marshal(*m)
	return b
}

// check validates the fields sent (422 naming each invalid one) and
// returns colors and fonts as the JSON to store (nil: keep).
func (req *BrandRequest) check() (colors, fonts []byte, err error) {
	var v httpapi.Validator
	checkText(&v, "name", req.Name, MaxNameLen)
	checkText(&v, "tagline", req.Tagline, MaxNameLen)
	checkText(&v, "description", req.Description, maxBrandText)
	checkText(&v, "voice", req.Voice, maxBrandText)
	checkText(&v, "audience", req.Audience, maxBrandText)
	colors = checkMap(&v, "colors", req.Colors)
	fonts = checkMap(&v, "fonts", req.Fonts)
	return colors, fonts, v.Err()
}

func (sv *Service) getBrand(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	draft, err := drafts.ReadDraft(r)
	if err != nil {
		return err
	}
	b, err := getBrand(r.Context(), s.Reader())
	if err != nil {
		return err
	}
	if draft {
		b, err = draftBrand(r.Context(), s.Reader(), b)
	}
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, b)
}

func (sv *Service) patchBrand(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req BrandRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	draft, autosave, err := drafts.Mode(r, req.Draft, req.Autosave)
	if err != nil {
		return err
	}
	colors, fonts, err := req.check()
	if err != nil {
		return err
	}
	b, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Brand, error) {
		if draft {
			b, err := lockBrand(r.Context(), tx)
			if err != nil {
				return b, err
			}
			return saveBrandDraft(r.Context(), tx, s, b, &req, autosave)
		}
		b, err := updateBrand(r.Context(), tx, req, colors, fonts)
		if err != nil {
			return b, err
		}
		b.HasDraft, err = hasDraft(r.Context(), tx, drafts.Brand, brandRef)
		return b, err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, b)
}

// uploadLogo is POST /brand/logo: a multipart image (field file) becomes
// the brand logo, served at logo_url. It costs what any image upload
// costs (image_register).
func (sv *Service) uploadLogo(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	up, err := readUpload(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	pid := s.Project.ID
	object := objectKey(pid, "logo")
	if _, err := sv.media.Put(ctx, object, bytes.NewReader(up.img.data)); err != nil {
		return fmt.Errorf("store logo: %w", err)
	}
	var previous string
	b, err := tenant.TxV(ctx, s, func(tx pgx.Tx) (Brand, error) {
		b, old, err := setLogo(ctx, tx, object, sv.MediaURL(pid, LogoKey))
		if err != nil {
			return b, err
		}
		previous = old
		if b.HasDraft, err = hasDraft(ctx, tx, drafts.Brand, brandRef); err != nil {
			return b, err
		}
		return b, credits.Charge(ctx, tx, s, "image_register", RegisterCost, "brand:logo")
	})
	if err != nil {
		sv.dropObject(ctx, pid, object)
		return err
	}
	sv.dropObject(ctx, pid, previous)
	return httpapi.JSON(w, http.StatusOK, b)
}
