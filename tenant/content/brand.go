package content

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/credits"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
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

const brandCols = `name, tagline, description, voice, audience, colors, fonts, logo_url, updated_at, COALESCE(logo_object, '')`

func scanBrand(row pgx.Row) (Brand, string, error) {
	var b Brand
	var colors, fonts []byte
	var object string
	if err := row.Scan(&b.Name, &b.Tagline, &b.Description, &b.Voice, &b.Audience, &colors, &fonts, &b.LogoURL, &b.UpdatedAt, &object); err != nil {
		return b, "", err
	}
	if err := json.Unmarshal(colors, &b.Colors); err != nil {
		return b, "", err
	}
	if err := json.Unmarshal(fonts, &b.Fonts); err != nil {
		return b, "", err
	}
	b.UpdatedAt = b.UpdatedAt.UTC()
	return b, object, nil
}

func getBrand(ctx context.Context, tx pgx.Tx) (Brand, string, error) {
	return scanBrand(tx.QueryRow(ctx, `SELECT `+brandCols+` FROM brand`))
}

func (sv *Service) getBrand(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	var b Brand
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		b, _, err = getBrand(r.Context(), tx)
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, b)
}

func (sv *Service) patchBrand(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	var req BrandRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	var v httpapi.Validator
	checkText(&v, "name", req.Name, MaxNameLen)
	checkText(&v, "tagline", req.Tagline, MaxNameLen)
	checkText(&v, "description", req.Description, maxBrandText)
	checkText(&v, "voice", req.Voice, maxBrandText)
	checkText(&v, "audience", req.Audience, maxBrandText)
	colors := checkMap(&v, "colors", req.Colors)
	fonts := checkMap(&v, "fonts", req.Fonts)
	if err := v.Err(); err != nil {
		return err
	}
	var b Brand
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		b, _, err = scanBrand(tx.QueryRow(r.Context(), `UPDATE brand SET name = COALESCE($1, name), tagline = COALESCE($2, tagline),
				description = COALESCE($3, description), voice = COALESCE($4, voice), audience = COALESCE($5, audience),
				colors = COALESCE($6, colors), fonts = COALESCE($7, fonts), updated_at = now()
			RETURNING `+brandCols, req.Name, req.Tagline, req.Description, req.Voice, req.Audience, colors, fonts))
		return err
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
	var b Brand
	var previous string
	err = s.Tx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT COALESCE(logo_object, '') FROM brand FOR UPDATE`).Scan(&previous); err != nil {
			return err
		}
		if err := credits.Charge(ctx, tx, s, "image_register", RegisterCost, "brand:logo"); err != nil {
			return err
		}
		b, _, err = scanBrand(tx.QueryRow(ctx, `UPDATE brand SET logo_object = $1, logo_url = $2, updated_at = now() RETURNING `+brandCols,
			object, sv.MediaURL(pid, LogoKey)))
		return err
	})
	if err != nil {
		sv.dropObject(ctx, object)
		return err
	}
	sv.dropObject(ctx, previous)
	return httpapi.JSON(w, http.StatusOK, b)
}
