package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Azurite (npm azurite) and fake-gcs-server (Go), installed by scripts/setup.sh under
// /usr/local/lib/godali-azurite and /usr/local/lib/godali-gcs, started on loopback on
// first use and stopped by TestMain like moto and nginx.

const azuriteAccount = "devstoreaccount1"

func findTool(name string, dirs ...string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// startServer runs args (built from the port) once under key and waits until probe
// (a URL built from the base URL) answers.
func startServer(t testing.TB, key, what string, args func(port int, dir string) []string, probe string) string {
	t.Helper()
	serversMu.Lock()
	defer serversMu.Unlock()
	if s, ok := started[key]; ok {
		if s.err != nil {
			t.Fatal(s.err)
		}
		return s.url
	}
	s := &server{}
	started[key] = s
	s.dir, s.err = os.MkdirTemp("", "godali-"+key)
	if s.err != nil {
		t.Fatal(s.err)
	}
	port := freePort(t)
	s.url = fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := args(port, s.dir)
	exited, err := startLogged(s, cmd, key+".log")
	if err == nil {
		err = waitHTTP(s.url+probe, 60*time.Second, exited)
	}
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, key+".log"))
		s.err = fmt.Errorf("starting %s (%v): %v\n%s", what, cmd, err, log)
		t.Fatal(s.err)
	}
	return s.url
}

// azuriteServer returns the Blob endpoint of a running Azurite
// (http://127.0.0.1:PORT/devstoreaccount1).
func azuriteServer(t testing.TB) string {
	t.Helper()
	bin := findTool("azurite-blob", "/usr/local/lib/godali-azurite/node_modules/.bin")
	if bin == "" {
		missing(t, "Azurite (npm azurite, under /usr/local/lib/godali-azurite)")
	}
	u := startServer(t, "azurite", "Azurite", func(port int, dir string) []string {
		return []string{bin, "--blobHost", "127.0.0.1", "--blobPort", fmt.Sprint(port), "--location", dir,
			"--silent", "--skipApiVersionCheck"}
	}, "/")
	return u + "/" + azuriteAccount
}

// fakeGCSServer returns the URL of a running fake-gcs-server (plain HTTP).
func fakeGCSServer(t testing.TB) string {
	t.Helper()
	bin := findTool("fake-gcs-server", "/usr/local/lib/godali-gcs")
	if bin == "" {
		missing(t, "fake-gcs-server (go install github.com/fsouza/fake-gcs-server, under /usr/local/lib/godali-gcs)")
	}
	return startServer(t, "fakegcs", "fake-gcs-server", func(port int, dir string) []string {
		return []string{bin, "-scheme", "http", "-host", "127.0.0.1", "-port", fmt.Sprint(port),
			"-backend", "memory", "-log-level", "error", "-public-host", fmt.Sprintf("127.0.0.1:%d", port)}
	}, "/storage/v1/b")
}

// azureEnv points the Azure settings at endpoint with the emulator's account key
// (and clears the other ways to authenticate).
func azureEnv(t testing.TB, endpoint string) {
	for _, k := range []string{"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_SAS_TOKEN", "GODALI_AZURE_STORAGE_TOKEN"} {
		setenv(t, k, "")
	}
	setenv(t, "AZURE_STORAGE_ACCOUNT", azuriteAccount)
	setenv(t, "AZURE_STORAGE_KEY", azureDevKey)
	setenv(t, "AZURE_STORAGE_SERVICE_ENDPOINT", endpoint)
}

// gcsEnv points gs:// at endpoint, anonymously.
func gcsEnv(t testing.TB, endpoint string) {
	for _, k := range []string{"GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "GODALI_GCS_ANONYMOUS"} {
		setenv(t, k, "")
	}
	setenv(t, "STORAGE_EMULATOR_HOST", endpoint)
}

func setenv(t testing.TB, k, v string) {
	if tt, ok := t.(*testing.T); ok {
		tt.Setenv(k, v)
		return
	}
	os.Setenv(k, v)
}

// bucketName is a container or bucket name for the test (lower case, letters and
// digits, at most 40 characters).
func bucketName(t testing.TB, prefix string) string {
	n := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, testName(t))
	return prefix + n[max(0, len(n)-(40-len(prefix))):]
}

// putAzure creates container on the Azurite endpoint (signed with the emulator's key)
// and uploads the blobs.
func putAzure(t testing.TB, endpoint, container string, data map[string][]byte) {
	t.Helper()
	b := &azureBackend{client: http.DefaultClient, endpoint: endpoint, account: azuriteAccount, now: time.Now}
	b.key, _ = decodeKey(azureDevKey)
	tg := azureTarget{container: container, base: endpoint, account: azuriteAccount}
	do := func(path string, q neturl.Values, h http.Header, body []byte) {
		if h == nil {
			h = http.Header{}
		}
		h.Set("Content-Length", fmt.Sprint(len(body)))
		req, err := b.request(context.Background(), http.MethodPut, tg, path, q, h)
		if err != nil {
			t.Fatal(err)
		}
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if len(body) == 0 {
			req.Body = http.NoBody // not chunked
		}
		resp, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 && resp.StatusCode != http.StatusConflict {
			t.Fatalf("PUT %s: %s: %s", path, resp.Status, msg)
		}
	}
	do("/"+container, neturl.Values{"restype": {"container"}}, nil, nil)
	for name, body := range data {
		do("/"+container+"/"+escapeBlob(name), nil, http.Header{"X-Ms-Blob-Type": {"BlockBlob"}}, body)
	}
}

// putGCS creates bucket on fake-gcs-server and uploads the objects.
func putGCS(t testing.TB, endpoint, bucket string, data map[string][]byte) {
	t.Helper()
	post := func(u, ctype string, body []byte) {
		resp, err := http.Post(u, ctype, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 && resp.StatusCode != http.StatusConflict {
			t.Fatalf("POST %s: %s: %s", u, resp.Status, msg)
		}
	}
	js, _ := json.Marshal(map[string]string{"name": bucket})
	post(endpoint+"/storage/v1/b", "application/json", js)
	for name, body := range data {
		post(endpoint+"/upload/storage/v1/b/"+bucket+"/o?uploadType=media&name="+neturl.QueryEscape(name), "application/octet-stream", body)
	}
}
