package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

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
}

func (c *projectExportCmd) Run(e *env) error {
	return e.withMedia(func(ctx context.Context, cen *central.Central) (any, error) {
		// Written beside the target and renamed at the end, so a failed
		// export leaves no partial archive under the name.
		tmp, err := os.CreateTemp(filepath.Dir(c.Output), ".plinth-export-*")
		if err != nil {
			return nil, err
		}
		defer os.Remove(tmp.Name())
		m, err := cen.ExportProject(ctx, c.Project, tmp)
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", c.Project, err)
		}
		st, err := os.Stat(tmp.Name())
		if err != nil {
			return nil, err
		}
		if err := os.Rename(tmp.Name(), c.Output); err != nil {
			return nil, err
		}
		return map[string]any{"project_id": c.Project, "file": c.Output, "size_bytes": st.Size(), "row_counts": m.RowCounts()}, nil
	})
}

type projectImportCmd struct {
	Tenant int64  `required:"" help:"Workspace id of the new project."`
	File   string `required:"" type:"existingfile" help:"The archive (plinth project export or GET /admin/api/exports/{id}/download)."`
	Name   string `help:"Name of the new project (default: the archived project's)."`
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
