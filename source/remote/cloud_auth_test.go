package remote

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godali/godali/source"
	"github.com/godali/godali/source/remote/internal/faultproxy"
)

// accountSAS signs an account SAS (version 2019-12-12: read and list on blob
// containers and objects) with key, as Microsoft documents it ("Create an account
// SAS"); Azurite checks it.
func accountSAS(account string, key []byte, expiry time.Time) string {
	v := neturl.Values{"sv": {"2019-12-12"}, "ss": {"b"}, "srt": {"co"}, "sp": {"rl"},
		"se": {expiry.UTC().Format("2006-01-02T15:04:05Z")}, "spr": {"https,http"}}
	toSign := strings.Join([]string{account, "rl", "b", "co", "", v.Get("se"), "", "https,http", "2019-12-12", ""}, "\n")
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(toSign))
	v.Set("sig", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return v.Encode()
}

// noneOf fails when s shows any of the secrets.
func noneOf(t *testing.T, what, s string, secrets ...string) {
	t.Helper()
	for _, sec := range secrets {
		if sec != "" && strings.Contains(s, sec) {
			t.Errorf("%s shows a secret (%.6s...): %s", what, sec, s)
		}
	}
}

// TestAzureAuthModes: the account key (Shared Key), a SAS token and a connection
// string each authorize against Azurite, which checks signatures; a wrong key or a
// SAS signed with it is refused with an error that names the blob and shows neither.
func TestAzureAuthModes(t *testing.T) {
	data := map[string][]byte{"d/a.bin": []byte("alpha"), "d/b.bin": []byte("bravo!")}
	_, base, p := azureFixture(t, data, faultproxy.Faults{}, Options{})
	endpoint := p.URL + "/" + azuriteAccount
	key, _ := decodeKey(azureDevKey)
	wrong := make([]byte, len(key))
	copy(wrong, key)
	wrong[0] ^= 1
	sas := accountSAS(azuriteAccount, key, time.Now().Add(time.Hour))
	badSAS := accountSAS(azuriteAccount, wrong, time.Now().Add(time.Hour))
	sig := func(q string) string { v, _ := neturl.ParseQuery(q); return v.Get("sig") }
	secrets := []string{azureDevKey, base64.StdEncoding.EncodeToString(wrong), sig(sas), sig(badSAS), neturl.QueryEscape(sig(sas)), neturl.QueryEscape(sig(badSAS))}

	read := func(t *testing.T) error {
		st := NewStore(Options{})
		defer st.CloseIdleConnections()
		f := NewFetcher(st, FetchOptions{Retry: RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond}})
		fsys := NewFS(context.Background(), f)
		ents, err := fsys.List(base + "d")
		if err != nil {
			return err
		}
		if len(ents) != 2 || ents[0].Name != "a.bin" {
			t.Fatalf("entries %+v", ents)
		}
		b, err := f.Get(context.Background(), base+"d/b.bin")
		if err == nil && string(b) != "bravo!" {
			t.Fatalf("read %q", b)
		}
		return err
	}
	env := func(t *testing.T, kv ...string) {
		for _, k := range []string{"AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_SERVICE_ENDPOINT", "GODALI_AZURE_STORAGE_TOKEN"} {
			t.Setenv(k, "")
		}
		for i := 0; i < len(kv); i += 2 {
			t.Setenv(kv[i], kv[i+1])
		}
	}
	for _, c := range []struct {
		name string
		env  []string
		ok   bool
	}{
		{"shared key", []string{"AZURE_STORAGE_ACCOUNT", azuriteAccount, "AZURE_STORAGE_KEY", azureDevKey, "AZURE_STORAGE_SERVICE_ENDPOINT", endpoint}, true},
		{"sas token", []string{"AZURE_STORAGE_SAS_TOKEN", "?" + sas, "AZURE_STORAGE_SERVICE_ENDPOINT", endpoint}, true},
		{"connection string", []string{"AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=http;AccountName=" + azuriteAccount + ";AccountKey=" + azureDevKey + ";BlobEndpoint=" + endpoint + ";"}, true},
		{"connection string with sas", []string{"AZURE_STORAGE_CONNECTION_STRING", "BlobEndpoint=" + endpoint + ";SharedAccessSignature=" + sas}, true},
		{"wrong key", []string{"AZURE_STORAGE_ACCOUNT", azuriteAccount, "AZURE_STORAGE_KEY", base64.StdEncoding.EncodeToString(wrong), "AZURE_STORAGE_SERVICE_ENDPOINT", endpoint}, false},
		{"sas signed with a wrong key", []string{"AZURE_STORAGE_SAS_TOKEN", badSAS, "AZURE_STORAGE_SERVICE_ENDPOINT", endpoint}, false},
		{"no credentials", []string{"AZURE_STORAGE_SERVICE_ENDPOINT", endpoint}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			env(t, c.env...)
			err := read(t)
			if c.ok != (err == nil) {
				t.Fatalf("got %v", err)
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || (e.Status != 403 && e.Status != 401) || !strings.Contains(err.Error(), base+"d") {
					t.Errorf("want a 401/403 naming %sd, got %v", base, err)
				}
				noneOf(t, "the error", err.Error(), secrets...)
			}
		})
	}
}

// TestAzureBearerToken: a bearer token from the environment is sent as such (to a
// server that records it and refuses), and the error does not show it.
func TestAzureBearerToken(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization") + "|" + r.Header.Get("x-ms-version"))
		w.Header().Set("x-ms-error-code", "InvalidAuthenticationInfo")
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	tok := "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.c2VjcmV0LXBheWxvYWQ.c2lnbmF0dXJl"
	for _, k := range []string{"AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING"} {
		t.Setenv(k, "")
	}
	t.Setenv("AZURE_STORAGE_ACCOUNT", "acct")
	t.Setenv("AZURE_STORAGE_SERVICE_ENDPOINT", srv.URL)
	t.Setenv("GODALI_AZURE_STORAGE_TOKEN", tok)
	st := NewStore(Options{})
	defer st.CloseIdleConnections()
	_, err := st.Open(context.Background(), "az://c/x.bin")
	if got.Load() != "Bearer "+tok+"|"+azureVersion {
		t.Fatalf("the server saw %q", got.Load())
	}
	if err == nil || !strings.Contains(err.Error(), "InvalidAuthenticationInfo") || !strings.Contains(err.Error(), "az://c/x.bin") {
		t.Fatalf("error %v", err)
	}
	noneOf(t, "the error", err.Error(), tok, "c2VjcmV0")
	if r := Redact("Authorization: Bearer " + tok); strings.Contains(r, "c2VjcmV0") {
		t.Fatalf("Redact keeps the token: %s", r)
	}
}

// Redact is source.Redact, for the tests here.
var Redact = func(s string) string { return redactForTest(s) }

// serviceAccountFixture writes a service-account key file whose token URI is a
// loopback server that checks the JWT's RS256 signature with the public key (and
// with openssl, an independent implementation, when it is installed) and its claims,
// then hands out tok.
func serviceAccountFixture(t *testing.T, tok string) (keyFile string, exchanges *atomic.Int64) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	exchanges = &atomic.Int64{}
	var checkOnce sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			http.Error(w, `{"error":"unsupported_grant_type"}`, 400)
			return
		}
		parts := strings.Split(r.Form.Get("assertion"), ".")
		if len(parts) != 3 {
			http.Error(w, `{"error":"invalid_grant"}`, 400)
			return
		}
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		if err := rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
			http.Error(w, `{"error":"invalid_grant","error_description":"bad signature"}`, 400)
			return
		}
		var hdr, claims map[string]any
		h, _ := base64.RawURLEncoding.DecodeString(parts[0])
		c, _ := base64.RawURLEncoding.DecodeString(parts[1])
		json.Unmarshal(h, &hdr)
		json.Unmarshal(c, &claims)
		now := float64(time.Now().Unix())
		if hdr["alg"] != "RS256" || hdr["kid"] != "kid1" || claims["iss"] != "reader@p.iam.gserviceaccount.com" || claims["scope"] != gcsScope ||
			claims["aud"] != "http://"+r.Host+"/token" || claims["iat"].(float64) > now+5 || claims["exp"].(float64)-claims["iat"].(float64) != 3600 {
			http.Error(w, `{"error":"invalid_grant","error_description":"bad claims"}`, 400)
			return
		}
		checkOnce.Do(func() { opensslVerify(t, dir, &key.PublicKey, parts[0]+"."+parts[1], sig) })
		exchanges.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "expires_in": 3599, "token_type": "Bearer"})
	}))
	t.Cleanup(srv.Close)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	js, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "p", "private_key_id": "kid1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "reader@p.iam.gserviceaccount.com", "token_uri": srv.URL + "/token"})
	keyFile = filepath.Join(dir, "sa.json")
	if err := os.WriteFile(keyFile, js, 0o600); err != nil {
		t.Fatal(err)
	}
	return keyFile, exchanges
}

// opensslVerify checks an RS256 signature with the openssl command, when installed.
func opensslVerify(t *testing.T, dir string, pub *rsa.PublicKey, signed string, sig []byte) {
	bin, err := exec.LookPath("openssl")
	if err != nil {
		t.Log("openssl not installed: the JWT signature is checked with crypto/rsa only")
		return
	}
	der, _ := x509.MarshalPKIXPublicKey(pub)
	pubFile, dataFile, sigFile := filepath.Join(dir, "pub.pem"), filepath.Join(dir, "jwt.data"), filepath.Join(dir, "jwt.sig")
	os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)
	os.WriteFile(dataFile, []byte(signed), 0o600)
	os.WriteFile(sigFile, sig, 0o600)
	if out, err := exec.Command(bin, "dgst", "-sha256", "-verify", pubFile, "-signature", sigFile, dataFile).CombinedOutput(); err != nil {
		t.Errorf("openssl does not verify the JWT's RS256 signature: %v: %s", err, out)
	}
}

// TestGCSCredentials: a service-account key (JWT exchanged once for a token) and an
// access token from the environment reach fake-gcs-server as a bearer token; the
// token shows in no error or cache entry.
func TestGCSCredentials(t *testing.T) {
	data := map[string][]byte{"x/a.bin": []byte("gcs object"), "x/b.bin": make([]byte, 70<<10)}
	endpoint := fakeGCSServer(t)
	bucket := bucketName(t, "g")
	putGCS(t, endpoint, bucket, data)
	target, _ := neturl.Parse(endpoint)
	var mu sync.Mutex
	auths := map[string]int{}
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths[r.Header.Get("Authorization")]++
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	defer srv.Close()
	tok := "ya29.c0SECRETACCESSTOKEN-" + bucket
	keyFile, exchanges := serviceAccountFixture(t, tok)
	base := "gs://" + bucket + "/"
	for _, c := range []struct{ name, env, value string }{
		{"service account", "GOOGLE_APPLICATION_CREDENTIALS", keyFile},
		{"access token", "GOOGLE_OAUTH_ACCESS_TOKEN", tok},
	} {
		t.Run(c.name, func(t *testing.T) {
			gcsEnv(t, srv.URL)
			t.Setenv(c.env, c.value)
			mu.Lock()
			clear(auths)
			mu.Unlock()
			st := NewStore(Options{})
			defer st.CloseIdleConnections()
			cacheDir := t.TempDir()
			cache, err := OpenCache(cacheDir, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			f := NewFetcher(st, FetchOptions{Cache: cache, ChunkSize: 32 << 10})
			listed, err := st.List(context.Background(), base+"x/")
			if err != nil {
				t.Fatal(err)
			}
			readStream(t, f, listed, func(u string) []byte { return data[strings.TrimPrefix(u, base)] })
			_, err = f.Get(context.Background(), base+"x/missing")
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("missing object: %v", err)
			}
			noneOf(t, "the error", err.Error(), tok)
			mu.Lock()
			if len(auths) != 1 || auths["Bearer "+tok] < 4 {
				t.Errorf("Authorization headers seen: %v", auths)
			}
			mu.Unlock()
			filepath.Walk(cacheDir, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					b, _ := os.ReadFile(p)
					noneOf(t, "cache file "+p, string(b), tok)
				}
				return nil
			})
		})
	}
	if n := exchanges.Load(); n != 1 {
		t.Errorf("%d token exchanges for one Store's requests, want 1 (the token is kept until it expires)", n)
	}
}

func redactForTest(s string) string { return source.Redact(s) }

// TestAzureHTTPSURLWithSAS: an https://ACCOUNT.blob.core.windows.net URL carrying its
// own SAS is read through the Azure backend (listing included: file_root works on it),
// with the URL's SAS and no other credentials; Azurite stands in for the account's
// host (connections to it are dialled to Azurite, which reads the account from the
// host name). The signature shows in no error.
func TestAzureHTTPSURLWithSAS(t *testing.T) {
	data := map[string][]byte{"d/a.bin": []byte("alpha"), "d/sub/b.bin": []byte("bravo!")}
	endpoint := azuriteServer(t)
	container := bucketName(t, "c")
	putAzure(t, endpoint, container, data)
	for _, k := range []string{"AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_SERVICE_ENDPOINT", "GODALI_AZURE_STORAGE_TOKEN"} {
		t.Setenv(k, "")
	}
	hostPort := strings.TrimPrefix(strings.TrimSuffix(endpoint, "/"+azuriteAccount), "http://")
	st := NewStore(Options{})
	defer st.CloseIdleConnections()
	b, err := st.backend(context.Background(), "az://x/y")
	if err != nil {
		t.Fatal(err)
	}
	dialer := &net.Dialer{}
	b.(*azureBackend).client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, hostPort)
	}}}
	key, _ := decodeKey(azureDevKey)
	sas := accountSAS(azuriteAccount, key, time.Now().Add(time.Hour))
	base := "http://" + azuriteAccount + ".blob.core.windows.net/" + container + "/"
	f := NewFetcher(st, FetchOptions{Retry: RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond}})
	fsys := NewFS(context.Background(), f)
	ents, err := fsys.List(base + "d?" + sas)
	if err != nil || len(ents) != 2 || ents[0].Name != "a.bin" || !ents[1].Dir {
		t.Fatalf("List: %+v, %v", ents, err)
	}
	var walked []string
	if err := fsys.Walk(base+"d?"+sas, func(p string) error { walked = append(walked, p); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(walked) != 2 || !strings.HasPrefix(walked[1], base+"d/sub/b.bin?") {
		t.Fatalf("Walk: %v", walked)
	}
	got, err := f.Get(context.Background(), walked[1])
	if err != nil || string(got) != "bravo!" {
		t.Fatalf("Get %s: %q, %v", Redact(walked[1]), got, err)
	}
	sig, _ := neturl.ParseQuery(sas)
	_, err = f.Get(context.Background(), base+"d/missing?"+sas)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	noneOf(t, "the error", err.Error(), sig.Get("sig"), neturl.QueryEscape(sig.Get("sig")))
	// Without the SAS (and no credentials): refused.
	if _, err := f.Get(context.Background(), base+"d/a.bin"); err == nil {
		t.Fatal("an unsigned request was answered")
	}
	// A transport error quotes the request URL: its signature is redacted.
	b.(*azureBackend).client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return nil, errors.New("dial refused for the test")
	}}}
	_, err = f.Get(context.Background(), base+"d/a.bin?"+sas)
	if err == nil || !strings.Contains(err.Error(), "dial refused") {
		t.Fatalf("got %v", err)
	}
	noneOf(t, "the transport error", err.Error(), sig.Get("sig"), neturl.QueryEscape(sig.Get("sig")))
}
