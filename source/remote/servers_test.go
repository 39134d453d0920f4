package remote

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

// The tests run real servers on loopback: moto (an S3-compatible server speaking
// signed S3 over HTTP) and nginx, both installed by scripts/setup.sh. Each is started
// once, on first use, and stopped by TestMain. Without the binary a test skips,
// except in CI (CI=true), where it fails.

func TestMain(m *testing.M) {
	code := m.Run()
	stopServers()
	os.Exit(code)
}

type server struct {
	cmd  *exec.Cmd
	url  string
	root string // nginx: the directory it serves
	dir  string
	err  error
}

var (
	serversMu sync.Mutex
	started   = map[string]*server{}
)

func stopServers() {
	serversMu.Lock()
	defer serversMu.Unlock()
	for _, s := range started {
		if s.cmd != nil && s.cmd.Process != nil {
			s.cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { s.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				s.cmd.Process.Kill()
				<-done
			}
		}
		if s.dir != "" {
			os.RemoveAll(s.dir)
		}
	}
}

func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" || os.Getenv("GODALI_STRICT_REFERENCES") == "1" {
		t.Fatalf("%s is not installed (scripts/setup.sh installs it); under CI=true or GODALI_STRICT_REFERENCES=1 this is a failure", what)
	}
	testref.Missing(t, "%s is not installed (run scripts/setup.sh)", what)
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitHTTP polls url until anything answers, up to limit.
func waitHTTP(url string, limit time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(limit)
	c := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("server exited")
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("no answer from %s within %v", url, limit)
}

// motoCommand finds moto's server: moto_server on PATH, or the project's Python
// (internal/pyref: scripts/setup.sh installs moto there), python3 or /usr/bin/python3
// that imports it.
func motoCommand() []string {
	if p, err := exec.LookPath("moto_server"); err == nil {
		if exec.Command(p, "--help").Run() == nil {
			return []string{p}
		}
	}
	for _, py := range []string{pyref.Python(), "python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import moto.server").Run() == nil {
			return []string{py, "-m", "moto.server"}
		}
	}
	return nil
}

var serverStarter = make(chan func())

func init() {
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives until the process ends
		for f := range serverStarter {
			f()
		}
	}()
}

func startLogged(s *server, args []string, logName string) (chan struct{}, error) {
	log, err := os.Create(filepath.Join(s.dir, logName))
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(args[0], args[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Pdeathsig fires when the thread that started the server ends, not the process:
	// start it from a thread that lives as long as the test binary (engine workers lock
	// and end threads, which would otherwise kill the server mid-test).
	started := make(chan error)
	serverStarter <- func() { started <- s.cmd.Start() }
	if err := <-started; err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { s.cmd.Process.Wait(); log.Close(); close(exited) }()
	return exited, nil
}

// motoServer returns the URL of a running moto server.
func motoServer(t testing.TB) string {
	t.Helper()
	serversMu.Lock()
	defer serversMu.Unlock()
	if s, ok := started["moto"]; ok {
		if s.err != nil {
			t.Fatal(s.err)
		}
		return s.url
	}
	cmd := motoCommand()
	if cmd == nil {
		missing(t, "moto (PyPI moto[server])")
	}
	s := &server{}
	started["moto"] = s
	s.dir, s.err = os.MkdirTemp("", "godali-moto")
	if s.err != nil {
		t.Fatal(s.err)
	}
	port := freePort(t)
	s.url = fmt.Sprintf("http://127.0.0.1:%d", port)
	exited, err := startLogged(s, append(cmd, "-H", "127.0.0.1", "-p", fmt.Sprint(port)), "moto.log")
	if err == nil {
		err = waitHTTP(s.url+"/moto-api/", 30*time.Second, exited)
	}
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "moto.log"))
		s.err = fmt.Errorf("starting moto (%v): %v\n%s", cmd, err, log)
		t.Fatal(s.err)
	}
	return s.url
}

// nginxServer returns the URL of a running nginx and the directory it serves.
func nginxServer(t testing.TB) (string, string) {
	t.Helper()
	serversMu.Lock()
	defer serversMu.Unlock()
	if s, ok := started["nginx"]; ok {
		if s.err != nil {
			t.Fatal(s.err)
		}
		return s.url, s.root
	}
	bin, err := exec.LookPath("nginx")
	if err != nil {
		for _, p := range []string{"/usr/sbin/nginx", "/sbin/nginx"} {
			if _, e := os.Stat(p); e == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		missing(t, "nginx (Debian package nginx)")
	}
	s := &server{}
	started["nginx"] = s
	s.dir, s.err = os.MkdirTemp("", "godali-nginx")
	if s.err != nil {
		t.Fatal(s.err)
	}
	s.root = filepath.Join(s.dir, "www")
	for _, d := range []string{s.root, filepath.Join(s.dir, "tmp")} {
		os.MkdirAll(d, 0o755)
	}
	os.Chmod(s.dir, 0o755)
	port := freePort(t)
	s.url = fmt.Sprintf("http://127.0.0.1:%d", port)
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // workers would otherwise drop to nobody, who cannot read a 0700 TMPDIR
	}
	conf := fmt.Sprintf(`%s
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path %[2]s/tmp/body;
  proxy_temp_path %[2]s/tmp/proxy;
  fastcgi_temp_path %[2]s/tmp/fastcgi;
  uwsgi_temp_path %[2]s/tmp/uwsgi;
  scgi_temp_path %[2]s/tmp/scgi;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:%[3]d;
    root %[4]s;
    location / { }
  }
}
`, user, s.dir, port, s.root)
	confPath := filepath.Join(s.dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	exited, err := startLogged(s, []string{bin, "-p", s.dir, "-e", filepath.Join(s.dir, "error.log"), "-c", confPath, "-g", "daemon off;"}, "nginx.out")
	if err == nil {
		err = waitHTTP(s.url+"/", 10*time.Second, exited)
	}
	if err != nil {
		out, _ := os.ReadFile(filepath.Join(s.dir, "nginx.out"))
		elog, _ := os.ReadFile(filepath.Join(s.dir, "error.log"))
		s.err = fmt.Errorf("starting nginx: %v\n%s%s", err, out, elog)
		t.Fatal(s.err)
	}
	return s.url, s.root
}

// s3Env points the AWS configuration chain at endpoint with test credentials.
func s3Env(t *testing.T, endpoint string) {
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_S3", endpoint)
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("GODALI_S3_PATH_STYLE", "")
}

func testName(t testing.TB) string {
	return strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
}

var _ = context.Background
