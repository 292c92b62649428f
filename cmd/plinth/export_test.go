package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"mime/multipart"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestProjectExportImport: `plinth project export` writes the archive
// of a project and `plinth project import` creates a copy from it in
// another workspace, with its rows and media (the API tests in central
// compare every table; this checks the commands' path and output).
func TestProjectExportImport(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("PUT", "/v1/content/hero.title", p.Key, map[string]any{"value": "Hello"}).Expect(t, 200)
	img, _ := base64.StdEncoding.DecodeString("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "hero.webp")
	_, _ = fw.Write(img)
	_ = mw.WriteField("key", "hero")
	_ = mw.Close()
	env.Send(apitest.Request{Method: "POST", Path: "/v1/images", Key: p.Key, Body: body.Bytes(),
		Header: map[string]string{"Content-Type": mw.FormDataContentType()}}).Expect(t, 201)
	vars := map[string]string{"DATABASE_URL": env.DB.URL, "PLINTH_SECRET": env.Config.Secret, "PLINTH_STORAGE": env.Config.Storage}

	file := filepath.Join(t.TempDir(), "site.tar.gz")
	exp := mustJSON(t, vars, "project", "export", "--project", p.ID, "-o", file)
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	counts, _ := exp["row_counts"].(map[string]any)
	if exp["project_id"] != p.ID || exp["file"] != file || exp["size_bytes"] != float64(st.Size()) || counts["content_values"] != float64(1) || counts["images"] != float64(1) {
		t.Fatalf("export printed %v (file of %d bytes)", exp, st.Size())
	}

	other := env.NewTenant()
	cp := mustJSON(t, vars, "project", "import", "--tenant", fmt.Sprint(other), "--file", file, "--name", "Staging")
	id, _ := cp["id"].(string)
	if id == "" || id == p.ID || cp["name"] != "Staging" || cp["tenant_id"] != float64(other) || cp["source_project_id"] != p.ID {
		t.Fatalf("import printed %v", cp)
	}
	key, err := env.Server.Central.MintKey(context.Background(), id, "test", []string{"*"}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if v := env.Do("GET", "/v1/content/hero.title", key.Secret, nil).Expect(t, 200).JSON(t)["value"]; v != "Hello" {
		t.Fatalf("the copy's content value: %v", v)
	}
	served := env.Do("GET", "/v1/public/media/"+id+"/hero", "", nil).Expect(t, 200).Body
	if !bytes.Equal(served, img) {
		t.Fatalf("the copy serves %d bytes, not the uploaded image", len(served))
	}

	// A file that is no archive is refused, and says why.
	bad := filepath.Join(t.TempDir(), "bad.tar.gz")
	if err := os.WriteFile(bad, []byte("not an archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cli(t, vars, "project", "import", "--tenant", fmt.Sprint(other), "--file", bad); err == nil || !strings.Contains(err.Error(), "not a gzip file") {
		t.Fatalf("import of a bad file: %v", err)
	}
	if _, _, err := cli(t, vars, "project", "export", "--project", "prj_000000000000000000000000", "-o", file+".2"); err == nil {
		t.Fatal("export of an unknown project must fail")
	}
	if _, err := os.Stat(file + ".2"); !os.IsNotExist(err) {
		t.Fatalf("a failed export left a file: %v", err)
	}
}
