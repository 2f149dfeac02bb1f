package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// childDataEnv makes the test binary a sandbox process serving the data
// file it names, for TestKillKeepsAnsweredWrites.
const childDataEnv = "SANDBOX_TEST_CHILD_DATA"

func TestMain(m *testing.M) {
	if file := os.Getenv(childDataEnv); file != "" {
		os.Exit(runChild(file))
	}
	os.Exit(m.Run())
}

func runChild(file string) int {
	srv, err := New(Options{DataFile: file})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("http://" + ln.Addr().String())
	if err := srv.Serve(context.Background(), ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// postStory creates a story and returns its id, or an error (the process may
// be gone).
func postStory(ctx context.Context, c *http.Client, base, token, title string) (int64, error) {
	b, _ := json.Marshal(env(map[string]any{"title": title, "external_id": title, "body": strings.Repeat("<p>text</p>", 50)}))
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v3/story", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		return 0, fmt.Errorf("status %d", res.StatusCode)
	}
	var out struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return 0, err
	}
	return out.Data.ID, nil
}

// TestKillKeepsAnsweredWrites kills a sandbox process (SIGKILL) while
// clients write to it, several times over the same data file: every write
// it answered is there after a restart, and the file always loads.
func TestKillKeepsAnsweredWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills processes: skipped with -short")
	}
	file := filepath.Join(t.TempDir(), "sandbox.json")
	answered := map[int64]string{} // id → title, over all rounds
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childDataEnv+"="+file)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			_ = cmd.Process.Kill()
			t.Fatalf("round %d: child: %v", round, err)
		}
		base := strings.TrimSpace(line)
		token := fetchToken(t, base)

		var mu sync.Mutex
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		c := &http.Client{Timeout: 30 * time.Second}
		for w := range 8 {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					title := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					id, err := postStory(ctx, c, base, token, title)
					if err != nil {
						return // killed
					}
					mu.Lock()
					answered[id] = title
					mu.Unlock()
				}
			})
		}
		// Kill while writes are in flight, once enough were answered.
		deadline := time.Now().Add(time.Minute)
		for {
			mu.Lock()
			n := len(answered)
			mu.Unlock()
			if n >= 150*(round+1) || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		cancel()
		wg.Wait()

		srv, err := New(Options{DataFile: file})
		if err != nil {
			t.Fatalf("round %d: the data file does not load after kill -9: %v", round, err)
		}
		got := map[int64]string{}
		for _, it := range srv.AllContent() {
			got[it.ID] = it.ExternalID
		}
		for id, title := range answered {
			if got[id] != title {
				t.Fatalf("round %d: answered write %d (%s) is %q after kill -9", round, id, title, got[id])
			}
		}
		t.Logf("round %d: %d answered writes, %d stories on disk", round, len(answered), len(got))
	}
}

// TestJournal checks the data file's journal: a torn last line is dropped,
// a damaged line before others is refused, and a grown journal is folded
// into a new snapshot.
func TestJournal(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, file string, n int) *Server {
		t.Helper()
		r := serve(t, Options{DataFile: file})
		defer r.stop()
		token := fetchToken(t, r.base)
		for i := range n {
			if _, err := postStory(t.Context(), http.DefaultClient, r.base, token, fmt.Sprint("s", i)); err != nil {
				t.Fatal(err)
			}
		}
		return r.srv
	}
	t.Run("torn last line", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "s.json")
		write(t, file, 3)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\nJ ")); n < 3 {
			t.Fatalf("%d journal lines, want 3 or more (a token and 3 writes)", n)
		}
		torn := b[:len(b)-10] // the last write cut short
		if err := os.WriteFile(file, torn, 0o600); err != nil {
			t.Fatal(err)
		}
		srv, err := New(Options{DataFile: file})
		if err != nil {
			t.Fatal(err)
		}
		if n := srv.Counts()["story"]; n != 2 {
			t.Errorf("%d stories after a torn last line, want 2", n)
		}
		// The reload folded the journal into a snapshot that loads alone.
		b, _ = os.ReadFile(file)
		if bytes.Contains(b, []byte("\nJ ")) {
			t.Error("journal lines remain after the reload")
		}
		var ds diskState
		if err := json.Unmarshal(b, &ds); err != nil {
			t.Errorf("the data file after reload is not one snapshot: %v", err)
		}
	})
	t.Run("damaged line before others", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "s.json")
		write(t, file, 3)
		b, _ := os.ReadFile(file)
		i := bytes.LastIndex(b, []byte(`"s1"`))
		if i < 0 {
			t.Fatal("no s1 in the journal")
		}
		b[i+2] = '7' // the checksum no longer matches
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Options{DataFile: file}); err == nil || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("New: %v, want a checksum error", err)
		}
		if after, _ := os.ReadFile(file); !bytes.Equal(after, b) {
			t.Error("the refused file was changed")
		}
	})
	t.Run("compaction", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "s.json")
		f := newFixture(t, Options{DataFile: file})
		f.srv.jr.compactMin = 1 << 10
		for i := range 40 {
			f.must(201, "POST", "/v3/story", env(map[string]any{"title": fmt.Sprint("s", i), "body": strings.Repeat("x", 200)}))
		}
		b, _ := os.ReadFile(file)
		if n := bytes.Count(b, []byte("\nJ ")); n >= 40 {
			t.Errorf("%d journal lines after 40 writes with a 1 KB threshold; want it compacted", n)
		}
		again, err := New(Options{DataFile: file})
		if err != nil {
			t.Fatal(err)
		}
		if n := again.Counts()["story"]; n != 40 {
			t.Errorf("%d stories after compaction and reload, want 40", n)
		}
	})
}
