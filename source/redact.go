package source

import (
	"net/url"
	"regexp"
	"strings"
)

// Redacted stands for a secret removed from a URL.
const Redacted = "xxxxx"

var (
	// userinfoRE matches the user[:password]@ of scheme://user:password@host.
	userinfoRE = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://)([^/?#@\s"'<>]*)@`)
	// paramRE matches a query parameter, name=value, after its ?, & or ;.
	paramRE = regexp.MustCompile(`([?&;])([^=&#;?\s"'<>]*)=([^&#;\s"'<>]*)`)
	// schemeRE matches the scheme:// a URL starts with.
	schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.\-]*://`)
	// secretNameRE matches the name of a query parameter that carries a secret:
	// presigned S3 URLs (X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token, and
	// version 2's Signature, AWSAccessKeyId), GCS (X-Goog-Signature, X-Goog-Credential,
	// GoogleAccessId), Azure SAS (sig), CloudFront (Signature, Key-Pair-Id, Policy), API
	// keys, tokens and passwords.
	secretNameRE = regexp.MustCompile(`(?i)^(?:.*(?:signature|token|credential|secret|password|passwd|apikey|api_key|api-key|access_key|accesskeyid|accessid|auth|key-pair-id).*|.*key|sig|policy|assertion)$`)
	// authRE matches the credentials of an Authorization header value: a bearer token,
	// an Azure Shared Key signature (SharedKey account:signature) or basic
	// credentials.
	authRE = regexp.MustCompile(`\b(Bearer|bearer|BEARER|Basic|SharedKey|SharedKeyLite)(\s+)([^\s:"',;<>]+:)?[A-Za-z0-9._~+/=-]{8,}`)
	// connRE matches the secret fields of a connection string (Azure's AccountKey and
	// SharedAccessSignature) where no separator comes before them.
	connRE = regexp.MustCompile(`(?i)\b(AccountKey|SharedAccessSignature|SharedAccessKey)=[^;\s"'<>]*`)
	// jsonSecretRE matches a secret JSON field: OAuth tokens, a service account's
	// private key, a client secret.
	jsonSecretRE = regexp.MustCompile(`(?i)("(?:access_token|id_token|refresh_token|private_key|client_secret|assertion)"\s*:\s*)"(?:[^"\\]|\\.)*"`)
	// pemKeyRE matches a PEM private key.
	pemKeyRE = regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*-----END [A-Z ]*PRIVATE KEY-----`)
)

// secretParam reports whether the query parameter name (percent-encoded or not) carries
// a secret.
func secretParam(name string) bool {
	if u, err := url.QueryUnescape(name); err == nil {
		name = u
	}
	return secretNameRE.MatchString(name)
}

// Redact removes the secrets URLs carry from s, wherever they appear in it: the
// password of scheme://user:password@host (a user name alone, which may be a token,
// is removed too) and the values of query parameters that carry signatures,
// credentials or tokens (secretParam). Everything that shows, logs or stores a URL
// passes it through Redact first; the object it names stays recognisable. Redact
// also removes credentials that come outside URLs: Authorization header values
// (Bearer, Basic, SharedKey), connection strings' AccountKey and
// SharedAccessSignature, OAuth tokens and private keys in JSON, PEM private keys.
func Redact(s string) string {
	s = redactCredentials(s)
	if !strings.Contains(s, "://") && !strings.ContainsAny(s, "?&;") {
		return s
	}
	s = userinfoRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := userinfoRE.FindStringSubmatch(m)
		user, _, hasPass := strings.Cut(sub[2], ":")
		if !hasPass {
			return sub[1] + Redacted + "@"
		}
		return sub[1] + user + ":" + Redacted + "@"
	})
	return paramRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := paramRE.FindStringSubmatch(m)
		if !secretParam(sub[2]) {
			return m
		}
		return sub[1] + sub[2] + "=" + Redacted
	})
}

// IsURL reports whether s is a URL (scheme://...) rather than a local path.
func IsURL(s string) bool {
	return schemeRE.MatchString(s)
}

// Location is what identifies the object the URL s names, without what authorizes
// the request: s without its user information, its secret query parameters
// (secretParam) and the parameters a signature brings along and that change when the
// URL is signed again: every X-Amz-* and X-Goog-* parameter, and with a signature or
// an Azure SAS (sig) the expiry and signing ones (Expires, Azure's sv, se, st, sp,
// ...). The scheme, host, port, path, the other parameters (in their order) and the
// fragment are kept as written. A checkpoint identifies its reader's sources by their
// Location, so that it resumes after credentials changed or a presigned URL was signed
// again, and refuses another object. Location(Redact(s)) == Location(s), and URLs
// inside s (a proxy's path) are redacted; a string that is not a URL is returned as it
// is.
func Location(s string) string {
	if !IsURL(s) {
		return s
	}
	s = Redact(s) // a URL inside this one's path loses its secrets too
	i := strings.Index(s, "://") + 3
	rest := s[i:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
		rest = rest[at+1:]
	}
	out, frag := s[:i], ""
	if h := strings.IndexByte(rest, '#'); h >= 0 {
		rest, frag = rest[:h], rest[h:]
	}
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		return out + rest + frag
	}
	out += rest[:q]
	// The parameters, each with the separator before it (& or ;).
	type param struct{ sep, text string }
	var params []param
	for query, sep := rest[q+1:], "&"; ; {
		j := strings.IndexAny(query, "&;")
		if j < 0 {
			params = append(params, param{sep, query})
			break
		}
		params = append(params, param{sep, query[:j]})
		sep, query = query[j:j+1], query[j+1:]
	}
	signed := false
	for _, p := range params {
		name, _, _ := strings.Cut(p.text, "=")
		if n := strings.ToLower(unescape(name)); n == "sig" || n == "signature" {
			signed = true
		}
	}
	kept := ""
	for _, p := range params {
		name, _, _ := strings.Cut(p.text, "=")
		if p.text == "" || signingParam(unescape(name), signed) {
			continue
		}
		if kept != "" {
			kept += p.sep
		}
		kept += p.text
	}
	if kept != "" {
		out += "?" + kept
	}
	return out + frag
}

// azureSAS are the parameters of an Azure shared access signature besides sig: version,
// services, resource types, permissions, start, expiry, IP range, protocol, identifier,
// resource, directory depth, encryption scope and the user delegation key's fields.
var azureSAS = map[string]bool{"sv": true, "ss": true, "srt": true, "sp": true, "st": true, "se": true,
	"sip": true, "spr": true, "si": true, "sr": true, "sdd": true, "ses": true, "skoid": true,
	"sktid": true, "skt": true, "ske": true, "sks": true, "skv": true, "saoid": true, "suoid": true, "scid": true}

// signingParam reports whether a query parameter authorizes the request rather than
// naming the object: a secret one, an X-Amz-* or X-Goog-* one, or (in a signed URL)
// an expiry or Azure SAS field.
func signingParam(name string, signed bool) bool {
	n := strings.ToLower(name)
	switch {
	case secretParam(name), strings.HasPrefix(n, "x-amz-"), strings.HasPrefix(n, "x-goog-"):
		return true
	case signed:
		return n == "expires" || azureSAS[n]
	}
	return false
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// redactCredentials removes the secrets that are not URL parts (Redact).
func redactCredentials(s string) string {
	if strings.Contains(s, "PRIVATE KEY-----") {
		s = pemKeyRE.ReplaceAllString(s, Redacted)
	}
	s = authRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := authRE.FindStringSubmatch(m)
		return sub[1] + sub[2] + sub[3] + Redacted // SharedKey keeps its account name
	})
	s = connRE.ReplaceAllString(s, "${1}="+Redacted)
	if strings.Contains(s, `"`) {
		s = jsonSecretRE.ReplaceAllString(s, `${1}"`+Redacted+`"`)
	}
	return s
}
