package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/storage"
)

// withMedia is admin with the media store opened, for the commands that
// read or write a project's media.
func (e *env) withMedia(do func(context.Context, *central.Central) (any, error)) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		cfg, err := config.Load(e.getenv)
		if err != nil {
			return nil, err
		}
		store, err := storage.Open(cfg.Storage, cfg.Getenv)
		if err != nil {
			return nil, err
		}
		cen.UseArchives(nil, store, cfg.MediaURL) // no job is enqueued here
		return do(ctx, cen)
	})
}

type projectExportCmd struct {
	Project string `required:"" help:"Project id (prj_…)."`
	Output  string `short:"o" required:"" type:"path" help:"The archive file to write (replaced when it exists)."`
	remoteFlags
}

func (c *projectExportCmd) Run(e *env) error {
	return e.withMedia(func(ctx context.Context, cen *central.Central) (any, error) {
		var counts map[string]int64
		size, err := writeFile(c.Output, func(w io.Writer) error {
			m, err := cen.ExportProject(ctx, c.Project, w)
			counts = m.RowCounts()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", c.Project, err)
		}
		return c.printed(size, counts), nil
	})
}

// printed is what the command prints of the archive it wrote.
func (c *projectExportCmd) printed(size int64, counts map[string]int64) map[string]any {
	return map[string]any{"project_id": c.Project, "file": c.Output, "size_bytes": size, "row_counts": counts}
}

// Remote starts an export on the server (its worker writes the archive
// to the server's store), follows it to its end, and downloads the
// archive to -o (scopes exports:write and exports:read).
func (c *projectExportCmd) Remote(e *env, api *adminClient) error {
	var x central.ExportJSON
	if err := api.do(e.ctx, "POST", "/projects/"+url.PathEscape(c.Project)+"/exports", nil, &x); err != nil {
		return fmt.Errorf("export %s: %w", c.Project, err)
	}
	var told string
	err := follow(e.ctx, func() (bool, error) {
		err := api.do(e.ctx, "GET", "/exports/"+url.PathEscape(x.ID), nil, &x)
		if x.Status == "pending" && x.Error != nil && *x.Error != told { // its job tries again
			told = *x.Error
			fmt.Fprintf(e.stderr, "export %s: an attempt failed, the server tries again: %s\n", x.ID, told)
		}
		return x.Status == "completed" || x.Status == "failed", err
	})
	if err == nil && x.Status == "failed" {
		why := "no error recorded"
		if x.Error != nil {
			why = *x.Error
		}
		err = fmt.Errorf("the server's export %s failed: %s", x.ID, why)
	}
	if err != nil {
		return fmt.Errorf("export %s: %w", c.Project, err)
	}
	req, err := api.request(e.ctx, "GET", "/exports/"+url.PathEscape(x.ID)+"/download", "", nil)
	if err != nil {
		return err
	}
	res, err := api.send(req)
	if err != nil {
		return fmt.Errorf("export %s: %w", c.Project, err)
	}
	defer res.Body.Close()
	size, err := writeFile(c.Output, func(w io.Writer) error {
		_, err := io.Copy(w, res.Body)
		return err
	})
	if err != nil {
		return fmt.Errorf("export %s: downloading %s: %w", c.Project, x.ID, err)
	}
	return e.printJSON(c.printed(size, x.RowCounts))
}

// writeFile writes path with write and returns its size. The bytes go
// to a file beside it, renamed at the end, so a failed write leaves no
// partial file under the name.
func writeFile(path string, write func(io.Writer) error) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plinth-export-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	err = write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	st, err := os.Stat(tmp.Name())
	if err != nil {
		return 0, err
	}
	return st.Size(), os.Rename(tmp.Name(), path)
}

type projectImportCmd struct {
	Tenant int64  `required:"" help:"Workspace id of the new project."`
	File   string `required:"" type:"existingfile" help:"The archive (plinth project export or GET /admin/api/exports/{id}/download); with --url at most the server's request limit (11 MiB by default)."`
	Name   string `help:"Name of the new project (default: the archived project's)."`
	remoteFlags
}

func (c *projectImportCmd) Run(e *env) error {
	return e.withMedia(func(ctx context.Context, cen *central.Central) (any, error) {
		f, err := os.Open(c.File)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return cen.ImportProject(ctx, c.Tenant, c.Name, f, nil) // the operator's: any plan
	})
}

// Remote uploads the archive as the form POST /admin/api/projects/import
// takes (scopes exports:write and projects:write; projects:admin for a
// plan other than free), streamed from the file.
func (c *projectImportCmd) Remote(e *env, api *adminClient) error {
	f, err := os.Open(c.File)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	// The form's fields and the file's part header, then the file, then
	// the closing boundary: its length is known, so nothing is held in
	// memory.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("tenant_id", strconv.FormatInt(c.Tenant, 10))
	if c.Name != "" {
		_ = mw.WriteField("name", c.Name)
	}
	if _, err := mw.CreateFormFile("file", filepath.Base(c.File)); err != nil {
		return err
	}
	head := form.Len()
	_ = mw.Close()
	parts := form.Bytes()
	req, err := api.request(e.ctx, "POST", "/projects/import", mw.FormDataContentType(),
		io.MultiReader(bytes.NewReader(parts[:head]), f, bytes.NewReader(parts[head:])))
	if err != nil {
		return err
	}
	req.ContentLength = int64(len(parts)) + st.Size()
	res, err := api.send(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var p central.ImportedProjectJSON
	if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
		return fmt.Errorf("the import's answer is not the admin API's: %w", err)
	}
	return e.printJSON(p)
}
