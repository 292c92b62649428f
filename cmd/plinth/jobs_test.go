package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/ai"
)

// runAsPlinthIfAsked makes the test binary the plinth binary: with
// PLINTH_TEST_MAIN=1 it runs main with its arguments and exits, so a test
// can start (and kill) a real plinth process. TestMain calls it first.
func runAsPlinthIfAsked() {
	if os.Getenv("PLINTH_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
}

// plinthProcess starts `plinth args...` as a child process with env added
// to a clean environment.
func plinthProcess(t *testing.T, env map[string]string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = []string{"PLINTH_TEST_MAIN=1", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &out
}

func waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A worker process is killed (SIGKILL) in the middle of an image job;
// after a new worker starts, the job completes once: one result, one
// image, one charge, and the River job shows the second attempt.
func TestWorkerKilledMidJobCompletesOnce(t *testing.T) {
	t.Parallel()
	img, err := ai.Offline{}.Image(context.Background(), ai.ImageRequest{Prompt: "kill test", Width: 80, Height: 60})
	if err != nil {
		t.Fatal(err)
	}
	hit := make(chan struct{}, 1)
	var calls atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // read to EOF, so a closed connection cancels r.Context()
		if calls.Add(1) == 1 {
			hit <- struct{}{}
			select { // hold the first worker mid-job until it dies
			case <-r.Context().Done():
			case <-time.After(60 * time.Second):
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[{"b64_json":%q}]}`, base64.StdEncoding.EncodeToString(img.Data))
	}))
	defer upstream.Close()

	env := apitest.New(t) // the API, without workers
	p := env.NewProject("build")
	before := p.Balance(t)
	job := env.Do("POST", "/v1/images", p.Key, map[string]any{"prompt": "A kite over the dunes"}).Expect(t, 202).JSON(t)
	jobID := job["id"].(string)

	workerEnv := map[string]string{
		"DATABASE_URL": env.DB.URL, "PLINTH_SECRET": env.Config.Secret, "PLINTH_STORAGE": env.Config.Storage,
		"PLINTH_AI_PROVIDER": "openai", "OPENAI_BASE_URL": upstream.URL, "OPENAI_API_KEY": "sk-test",
	}
	first, firstOut := plinthProcess(t, workerEnv, "worker")
	select {
	case <-hit:
	case <-time.After(60 * time.Second):
		t.Fatalf("the first worker never called the provider:\n%s", firstOut)
	}
	if j := env.Do("GET", "/v1/jobs/"+jobID, p.Key, nil).Expect(t, 200).JSON(t); j["status"] != "processing" {
		t.Fatalf("mid-job the job is %v", j["status"])
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()

	second, secondOut := plinthProcess(t, workerEnv, "worker")
	var j map[string]any
	waitFor(t, "the job to complete after the restart", 60*time.Second, func() bool {
		j = env.Do("GET", "/v1/jobs/"+jobID, p.Key, nil).Expect(t, 200).JSON(t)
		return j["status"] == "completed" || j["status"] == "failed"
	})
	if j["status"] != "completed" {
		t.Fatalf("job: %v\n%s", j, secondOut)
	}
	if calls.Load() != 2 {
		t.Fatalf("the provider was called %d times, want 2 (one per attempt)", calls.Load())
	}
	res := j["result"].(map[string]any)
	if res["width"] != float64(80) || res["height"] != float64(60) {
		t.Fatalf("result: %v", res)
	}
	// One charge, never refunded; one image; the River job on attempt 2.
	if after := p.Balance(t); before-after != 1000 {
		t.Fatalf("charged %d hundredths, want 1000", before-after)
	}
	var ledgerRows, images, attempt int
	var errs string
	err = p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		ctx := context.Background()
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM credit_ledger WHERE ref = $1`, jobID).Scan(&ledgerRows); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM images WHERE key = $1`, res["key"]).Scan(&images); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT r.attempt, r.errors::text FROM jobs j JOIN river.river_job r ON r.id = j.river_id WHERE j.id = $1 AND r.state = 'completed'`, jobID).Scan(&attempt, &errs)
	})
	if err != nil {
		t.Fatal(err)
	}
	if ledgerRows != 1 || images != 1 || attempt != 2 || !strings.Contains(errs, "died") {
		t.Fatalf("ledger rows %d, images %d, attempt %d, errors %s", ledgerRows, images, attempt, errs)
	}
	url := res["url"].(string)
	media := env.Do("GET", url[strings.Index(url, "/v1/"):], "", nil).Expect(t, 200)
	if !bytes.Equal(media.Body, img.Data) {
		t.Fatal("the served image differs from the generated one")
	}

	// A graceful stop of the worker ends it with status 0.
	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.Wait(); err != nil {
		t.Fatalf("worker exit: %v\n%s", err, secondOut)
	}
}

// `plinth serve --no-workers` serves the API and runs no job; `plinth
// worker` runs the jobs and serves nothing.
func TestServeNoWorkersAndWorker(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // a database with a project and key
	p := env.NewProject("build")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	vars := map[string]string{"DATABASE_URL": env.DB.URL, "PLINTH_ADDR": addr, "PLINTH_SECRET": env.Config.Secret, "PLINTH_STORAGE": env.Config.Storage}
	getenv := func(k string) string { return vars[k] }

	apiCtx, stopAPI := context.WithCancel(context.Background())
	apiDone := make(chan error, 1)
	go func() { apiDone <- run(apiCtx, []string{"serve", "--no-workers"}, getenv, io.Discard, io.Discard) }()
	defer stopAPI()
	base := "http://" + addr
	waitFor(t, "the API", 60*time.Second, func() bool {
		res, err := http.Get(base + "/v1/health")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == 200
	})
	req, _ := http.NewRequest("POST", base+"/v1/images", strings.NewReader(`{"prompt":"queued only"}`))
	req.Header.Set("Authorization", "Bearer "+p.Key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var job struct{ ID, Status string }
	decodeJSON(t, res, &job)
	if res.StatusCode != 202 || job.Status != "pending" {
		t.Fatalf("submit: %d %+v", res.StatusCode, job)
	}
	time.Sleep(1500 * time.Millisecond)
	if j := env.Do("GET", "/v1/jobs/"+job.ID, p.Key, nil).Expect(t, 200).JSON(t); j["status"] != "pending" {
		t.Fatalf("with no worker running the job must stay pending: %v", j)
	}

	workerCtx, stopWorker := context.WithCancel(context.Background())
	workerDone := make(chan error, 1)
	go func() { workerDone <- run(workerCtx, []string{"worker"}, getenv, io.Discard, io.Discard) }()
	waitFor(t, "the worker to run the job", 60*time.Second, func() bool {
		return env.Do("GET", "/v1/jobs/"+job.ID, p.Key, nil).Expect(t, 200).JSON(t)["status"] == "completed"
	})
	stopWorker()
	stopAPI()
	for _, ch := range []chan error{workerDone, apiDone} {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatalf("run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("run did not return after cancel")
		}
	}
}

func decodeJSON(t *testing.T, res *http.Response, v any) {
	t.Helper()
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}
