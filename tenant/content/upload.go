package content

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // registers GIF for image.DecodeConfig
	_ "image/jpeg" // registers JPEG
	_ "image/png"  // registers PNG
	"io"
	"mime"
	"net/http"
	"path"
	"strings"

	_ "golang.org/x/image/webp" // registers WebP

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
)

// MaxUpload bounds an uploaded or fetched image (413 above it on upload).
const MaxUpload = 10 << 20

// maxSide bounds an image's width and height: a small file can declare a
// huge canvas that would exhaust whoever decodes it.
const maxSide = 16384

// maxField bounds a text field of a multipart form.
const maxField = 4096

// imageFormats maps the sniffed content types accepted to the format name
// image.DecodeConfig reports for them. SVG is refused: it is a script
// carrier served from our origin.
var imageFormats = map[string]string{
	"image/png":  "png",
	"image/jpeg": "jpeg",
	"image/gif":  "gif",
	"image/webp": "webp",
}

// checkedImage is image bytes whose type and size have been verified.
type checkedImage struct {
	data        []byte
	contentType string
	width       int
	height      int
}

// inspect sniffs data's content type and reads its dimensions; the error
// is meant for the user (a 422 on field).
func inspect(data []byte) (checkedImage, error) {
	ct := http.DetectContentType(data)
	format, ok := imageFormats[ct]
	if !ok {
		return checkedImage{}, fmt.Errorf("must be a PNG, JPEG, GIF or WebP image (the content is %s)", strings.SplitN(ct, ";", 2)[0])
	}
	cfg, got, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || got != format || cfg.Width <= 0 || cfg.Height <= 0 {
		return checkedImage{}, errors.New("is not a readable " + strings.ToUpper(format) + " image")
	}
	if cfg.Width > maxSide || cfg.Height > maxSide {
		return checkedImage{}, fmt.Errorf("must be at most %d pixels wide and high", maxSide)
	}
	return checkedImage{data: data, contentType: ct, width: cfg.Width, height: cfg.Height}, nil
}

// upload is a parsed multipart image form: the checked file, its file
// name, and the text fields.
type upload struct {
	img      checkedImage
	filename string
	fields   map[string]string
}

func tooLarge() error {
	return httpapi.NewError(http.StatusRequestEntityTooLarge, httpapi.CodeBadRequest, "the file is larger than 10 MiB")
}

// readUpload reads a multipart/form-data body with one image part "file"
// and the text fields named in allowed; any other part is a 400, as an
// unknown JSON field is.
func readUpload(r *http.Request, allowed ...string) (upload, error) {
	up := upload{fields: map[string]string{}}
	mr, err := r.MultipartReader()
	if err != nil {
		return up, httpapi.BadRequest("the body must be multipart/form-data with a file part")
	}
	var data []byte
	seenFile := false
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return up, readErr(err)
		}
		name := part.FormName()
		switch {
		case name == "file":
			if seenFile {
				return up, httpapi.BadRequest(`the form has more than one "file" part`)
			}
			seenFile = true
			up.filename = part.FileName()
			data, err = io.ReadAll(io.LimitReader(part, MaxUpload+1))
			if err != nil {
				return up, readErr(err)
			}
			if len(data) > MaxUpload {
				return up, tooLarge()
			}
		case contains(allowed, name):
			b, err := io.ReadAll(io.LimitReader(part, maxField+1))
			if err != nil {
				return up, readErr(err)
			}
			if len(b) > maxField {
				return up, httpapi.Invalid(name, fmt.Sprintf("must be at most %d bytes", maxField))
			}
			if !httpapi.ValidText(string(b)) { // stored as text, as a JSON string would be
				return up, httpapi.BadRequest(fmt.Sprintf("the field %q is not UTF-8 text without NUL characters", name))
			}
			up.fields[name] = string(b)
		default:
			return up, httpapi.BadRequest(fmt.Sprintf("unknown field %q", name))
		}
		part.Close()
	}
	if !seenFile {
		return up, httpapi.BadRequest(`missing required field "file"`)
	}
	if len(data) == 0 {
		return up, httpapi.Invalid("file", "must not be empty")
	}
	if up.img, err = inspect(data); err != nil {
		return up, httpapi.Invalid("file", err.Error())
	}
	return up, nil
}

func readErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge()
	}
	return httpapi.BadRequest("the multipart body could not be read: " + err.Error())
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isMultipart reports whether r carries a multipart/form-data body.
func isMultipart(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "multipart/form-data"
}

// objectKey names a new stored object for an image key of a project.
// Uploads live under "_u/", which no image key can spell (keys start with
// a letter or digit), so they never meet a generated image's
// {project}/{key}; the random part makes every write a new object.
func objectKey(projectID, key string) string {
	return projectID + "/_u/" + key + "." + id.New("")
}

// keyFromFilename derives an image key base from an upload's file name.
func keyFromFilename(name string) string {
	base := strings.TrimSuffix(path.Base(strings.ReplaceAll(name, `\`, "/")), path.Ext(name))
	if base == "" || base == "." || base == "/" {
		return "image"
	}
	return base
}
