package source

import (
	"net/url"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://user:PASSWORD@host:8080/a/b.jpg", "http://user:xxxxx@host:8080/a/b.jpg"},
		{`open "https://TOKEN@github.com/x": refused`, `open "https://xxxxx@github.com/x": refused`},
		{"s3://bucket/key.tar", "s3://bucket/key.tar"},
		{"/data/a.jpg", "/data/a.jpg"},
		{"https://b.s3.amazonaws.com/k.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20261124%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261124T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=FQoGZXIvYXdzEXAMPLE&X-Amz-Signature=0123abcd",
			"https://b.s3.amazonaws.com/k.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=xxxxx&X-Amz-Date=20261124T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=xxxxx&X-Amz-Signature=xxxxx"},
		{"https://acct.blob.core.windows.net/c/b?sv=2022&sig=SECRETSIG&se=2026", "https://acct.blob.core.windows.net/c/b?sv=2022&sig=xxxxx&se=2026"},
		{"remote get http://u:p@h/x?token=T1 (after 8 attempts): Get \"http://u:xxxxx@h/x?token=T1\": EOF",
			"remote get http://u:xxxxx@h/x?token=xxxxx (after 8 attempts): Get \"http://u:xxxxx@h/x?token=xxxxx\": EOF"},
		{"no url here", "no url here"},
		// Credentials outside URLs (Azure, GCS, OAuth).
		{"Authorization: SharedKey devstoreaccount1:AbC+/d3F=", "Authorization: SharedKey devstoreaccount1:xxxxx"},
		{"Authorization: Bearer ya29.a0SECRET-TOKEN_x; next", "Authorization: Bearer xxxxx; next"},
		{"header Basic dXNlcjpwYXNz", "header Basic xxxxx"},
		{"AccountKey=Eby8vd+M/02x==;AccountName=a", "AccountKey=xxxxx;AccountName=a"},
		{"DefaultEndpointsProtocol=https;AccountName=a;AccountKey=K3Y/+=;EndpointSuffix=core.windows.net",
			"DefaultEndpointsProtocol=https;AccountName=a;AccountKey=xxxxx;EndpointSuffix=core.windows.net"},
		{"BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=2022&sig=S1G",
			"BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=xxxxx"},
		{`{"access_token": "ya29.SECRET", "expires_in": 3599, "token_type": "Bearer"}`, `{"access_token": "xxxxx", "expires_in": 3599, "token_type": "Bearer"}`},
		{`{"private_key": "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n", "client_email": "a@b"}`, `{"private_key": "xxxxx", "client_email": "a@b"}`},
		{"key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpQ\n-----END RSA PRIVATE KEY-----\n", "key:\nxxxxx\n"},
		{"grant_type=urn%3Aietf&assertion=eyJhbGciOi.eyJpc3Mi.c2ln", "grant_type=urn%3Aietf&assertion=xxxxx"},
		{"az://container/dir/a.jpg", "az://container/dir/a.jpg"},
		{"gs://bucket/dir/a.jpg", "gs://bucket/dir/a.jpg"},
		{"the bearer of bad news", "the bearer of bad news"},
		{"Basic usage", "Basic usage"},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
	// What Redact leaves of a URL still parses and names the same object.
	in := "http://alice:s3cr%40t@example.com/data/x.jpg?X-Amz-Signature=abc"
	out := Redact(in)
	if strings.Contains(out, "s3cr") || strings.Contains(out, "abc") {
		t.Fatalf("Redact(%q) = %q keeps a secret", in, out)
	}
	u, err := url.Parse(out)
	if err != nil || u.Host != "example.com" || u.Path != "/data/x.jpg" {
		t.Fatalf("Redact(%q) = %q: %v, host %q path %q", in, out, err, u.Host, u.Path)
	}
}

// Every kind of secret a URL carries is redacted, and is no part of its Location.
func TestRedactAndLocationDropEverySecret(t *testing.T) {
	for _, c := range []struct{ in, loc string }{
		{"https://alice:PW1@h.example:8443/d/a.jpg", "https://h.example:8443/d/a.jpg"},
		{"https://TOKEN1@github.com/x/a.jpg", "https://github.com/x/a.jpg"},
		{"https://b.s3.amazonaws.com/k.jpg?versionId=3&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIASECRET1%2F20261124%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261124T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=SECRET2&X-Amz-Signature=SECRET3",
			"https://b.s3.amazonaws.com/k.jpg?versionId=3"},
		{"https://b.s3.amazonaws.com/k.jpg?AWSAccessKeyId=SECRET1&Expires=1700000000&Signature=SECRET2", "https://b.s3.amazonaws.com/k.jpg"},
		{"https://storage.googleapis.com/b/o.jpg?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=SECRET1&X-Goog-Date=20261124T000000Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host&X-Goog-Signature=SECRET2",
			"https://storage.googleapis.com/b/o.jpg"},
		{"https://storage.googleapis.com/b/o.jpg?GoogleAccessId=SECRET1&Expires=1&Signature=SECRET2", "https://storage.googleapis.com/b/o.jpg"},
		{"https://a.blob.core.windows.net/c/b.jpg?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-01T00:00:00Z&st=2026-11-01&spr=https&sig=SECRET1%3D",
			"https://a.blob.core.windows.net/c/b.jpg"},
		{"https://d.cloudfront.net/a.jpg?Expires=1&Signature=SECRET1&Key-Pair-Id=SECRET2", "https://d.cloudfront.net/a.jpg"},
		{"https://h/a.jpg?token=SECRET1&size=big", "https://h/a.jpg?size=big"},
		{"https://h/a.jpg?access_token=SECRET1#frag", "https://h/a.jpg#frag"},
		{"https://h/a.jpg?key=SECRET1&apikey=SECRET2&x-api-key=SECRET3&password=SECRET4&api_key=SECRET5", "https://h/a.jpg"},
		{"https://h/a.jpg?X%2DAmz%2DSignature=SECRET1", "https://h/a.jpg"},
		// Not a signed URL: se, sp and expires name the object.
		{"http://h/q?se=1&sp=2&expires=3", "http://h/q?se=1&sp=2&expires=3"},
		{"s3://bucket/prefix/a.jpg", "s3://bucket/prefix/a.jpg"},
		{"/data/a?token=x.jpg", "/data/a?token=x.jpg"},
	} {
		red := Redact(c.in)
		if strings.Contains(red, "SECRET") || strings.Contains(red, "PW1") || strings.Contains(red, "TOKEN1") {
			if IsURL(c.in) {
				t.Errorf("Redact(%q) = %q keeps a secret", c.in, red)
			}
		}
		if got := Location(c.in); got != c.loc {
			t.Errorf("Location(%q)\n = %q\nwant %q", c.in, got, c.loc)
		}
		if got := Location(red); IsURL(c.in) && got != c.loc {
			t.Errorf("Location(Redact(%q))\n = %q\nwant %q", c.in, got, c.loc)
		}
	}
	// Signed again (new date, expiry and signature), the same object; another key, not.
	a := "https://b.s3.amazonaws.com/k1.jpg?X-Amz-Date=20261124T000000Z&X-Amz-Expires=60&X-Amz-Signature=aaa"
	b := "https://b.s3.amazonaws.com/k1.jpg?X-Amz-Date=20261125T000000Z&X-Amz-Expires=600&X-Amz-Signature=bbb"
	c := "https://b.s3.amazonaws.com/k2.jpg?X-Amz-Date=20261124T000000Z&X-Amz-Expires=60&X-Amz-Signature=aaa"
	if Location(a) != Location(b) || Location(a) == Location(c) {
		t.Errorf("Location: %q %q %q", Location(a), Location(b), Location(c))
	}
}

func FuzzLocation(f *testing.F) {
	f.Add("https://u:p@h:1/a/b?X-Amz-Signature=s&v=1#f")
	f.Add("s3://b/k?sig=1&se=2")
	f.Add("http://@/?&;=")
	f.Fuzz(func(t *testing.T, s string) {
		loc := Location(s)
		if IsURL(s) && Location(Redact(s)) != loc {
			t.Fatalf("Location(Redact(%q)) = %q, Location = %q", s, Location(Redact(s)), loc)
		}
		if IsURL(s) && Redact(loc) != loc {
			t.Fatalf("Location(%q) = %q keeps what Redact removes: %q", s, loc, Redact(loc))
		}
		if Location(loc) != loc {
			t.Fatalf("Location is not idempotent on %q: %q then %q", s, loc, Location(loc))
		}
	})
}
