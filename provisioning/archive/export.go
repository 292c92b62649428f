package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/provisioning"
)

// copyOptions make COPY write each row_to_json object as it is: CSV
// quotes a value only when it holds the quote or delimiter character or a
// line break, and JSON text never holds \x01 or \x02 (it escapes control
// characters), so only a line break quotes a row (see rowWriter).
const copyOptions = `(FORMAT csv, QUOTE e'\x01', DELIMITER e'\x02')`

// Export writes the project's archive to w and returns its manifest. The
// rows are read in one REPEATABLE READ transaction (one snapshot of every
// table); the NDJSON is spooled to a temporary file first, since the
// manifest, which comes first, counts the rows. Media objects are read
// from media after the rows.
func Export(ctx context.Context, plane Plane, media storage.Store, projectID string, w io.Writer) (Manifest, error) {
	p, err := plane.Project(ctx, projectID)
	if err != nil {
		return Manifest{}, err
	}
	pool, err := plane.ShardPool(p.Shard)
	if err != nil {
		return Manifest{}, err
	}
	m := Manifest{Format: FormatName, FormatVersion: FormatVersion, CreatedAt: time.Now().UTC().Truncate(time.Second),
		Project: Project{ID: p.ID, Name: p.Name, Slug: p.Slug, Plan: p.Plan, Industry: p.Industry, DefaultLanguage: p.DefaultLanguage,
			TargetLanguages: nonNil(p.TargetLanguages), Timezone: p.Timezone, AllowedOrigins: nonNil(p.AllowedOrigins), SiteURL: p.SiteURL,
			FallbackLanguages: p.FallbackLanguages},
		Tables: []Table{}, Media: []Media{}}

	spool, err := os.CreateTemp("", "plinth-export-*.ndjson")
	if err != nil {
		return Manifest{}, err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	offsets, err := readTables(ctx, pool, p.Schema, spool, &m)
	if err != nil {
		return Manifest{}, err
	}

	keys, err := media.List(ctx, p.ID+"/")
	if err != nil {
		return Manifest{}, fmt.Errorf("list media: %w", err)
	}
	for _, k := range keys {
		obj, err := media.Open(ctx, k)
		if err != nil {
			return Manifest{}, fmt.Errorf("media %s: %w", k, err)
		}
		size := obj.Size()
		obj.Close()
		rel := k[len(p.ID)+1:]
		m.Media = append(m.Media, Media{Key: rel, File: "media/" + rel, Size: size})
	}

	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	if err := writeEntry(tw, ManifestName, int64(len(manifest)), m.CreatedAt, bytes.NewReader(manifest)); err != nil {
		return Manifest{}, err
	}
	for i, t := range m.Tables {
		sec := io.NewSectionReader(spool, offsets[i], offsets[i+1]-offsets[i])
		if err := writeEntry(tw, t.File, sec.Size(), m.CreatedAt, sec); err != nil {
			return Manifest{}, err
		}
	}
	for _, md := range m.Media {
		obj, err := media.Open(ctx, p.ID+"/"+md.Key)
		if err != nil {
			return Manifest{}, fmt.Errorf("media %s: %w", md.Key, err)
		}
		err = writeEntry(tw, md.File, md.Size, m.CreatedAt, obj)
		obj.Close()
		if err != nil {
			return Manifest{}, fmt.Errorf("media %s (changed while exported?): %w", md.Key, err)
		}
	}
	if err := tw.Close(); err != nil {
		return Manifest{}, err
	}
	return m, gz.Close()
}

// readTables copies every exported table of schema to spool as NDJSON, in
// one snapshot, filling m's migrations and tables; offsets[i] is where
// table i starts in spool, and the last offset its end.
func readTables(ctx context.Context, pool interface {
	BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
}, schema string, spool *os.File, m *Manifest) ([]int64, error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	tables, err := provisioning.Tables(ctx, tx, schema)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	if len(tables) == 0 {
		return nil, fmt.Errorf("schema %s has no tables", schema)
	}
	if m.Migrations.Applied, err = provisioning.AppliedVersions(ctx, tx, schema); err != nil {
		return nil, fmt.Errorf("migration level: %w", err)
	}
	for _, v := range m.Migrations.Applied {
		m.Migrations.Version = max(m.Migrations.Version, v)
	}
	buf := bufio.NewWriterSize(spool, 256<<10)
	rw := &rowWriter{w: buf}
	offsets := []int64{0}
	for _, t := range tables {
		if _, skip := Skipped[t.Name]; skip {
			continue
		}
		rw.rows = 0
		sql := `COPY (SELECT row_to_json(t) FROM ` + pgx.Identifier{schema, t.Name}.Sanitize() + ` t) TO STDOUT WITH ` + copyOptions
		if _, err := tx.Conn().PgConn().CopyTo(ctx, rw, sql); err != nil {
			return nil, fmt.Errorf("read %s: %w", t.Name, err)
		}
		if rw.err != nil {
			return nil, rw.err
		}
		m.Tables = append(m.Tables, Table{Name: t.Name, File: "tables/" + t.Name + ".ndjson", Rows: rw.rows})
		offsets = append(offsets, rw.n)
	}
	if err := buf.Flush(); err != nil {
		return nil, err
	}
	return offsets, tx.Commit(ctx)
}

// rowWriter turns COPY's CSV output (see copyOptions) into NDJSON: a row
// quoted because it holds a line break (the whitespace of a json column
// stored with line breaks; JSON strings cannot hold one) loses its quotes
// and has the breaks replaced by spaces, which JSON reads alike.
type rowWriter struct {
	w      *bufio.Writer
	quoted bool
	rows   int64
	n      int64 // bytes written
	err    error
}

func (rw *rowWriter) Write(p []byte) (int, error) {
	start := 0
	emit := func(b []byte) {
		if rw.err == nil {
			var k int
			k, rw.err = rw.w.Write(b)
			rw.n += int64(k)
		}
	}
	for i, b := range p {
		switch {
		case b == 0x01:
			emit(p[start:i])
			rw.quoted, start = !rw.quoted, i+1
		case rw.quoted && (b == '\n' || b == '\r'):
			emit(p[start:i])
			emit([]byte{' '})
			start = i + 1
		case b == '\n':
			rw.rows++
		}
	}
	emit(p[start:])
	return len(p), rw.err
}

func writeEntry(tw *tar.Writer, name string, size int64, mod time.Time, r io.Reader) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644, ModTime: mod}); err != nil {
		return err
	}
	n, err := io.Copy(tw, r)
	if err == nil && n != size {
		err = fmt.Errorf("%s: %d bytes, not %d", name, n, size)
	}
	return err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
