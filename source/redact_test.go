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
