package source

import (
	"regexp"
	"strings"
)

// Redacted stands for a secret removed from a URL.
const Redacted = "xxxxx"

var (
	// userinfoRE matches the user[:password]@ of scheme://user:password@host.
	userinfoRE = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://)([^/?#@\s"'<>]*)@`)
	// secretParamRE matches a query parameter whose name says it carries a secret:
	// presigned S3 and GCS URLs (X-Amz-Signature, X-Amz-Credential,
	// X-Amz-Security-Token, X-Goog-Signature), Azure SAS (sig), API keys and tokens.
	secretParamRE = regexp.MustCompile(`(?i)([?&;](?:[^=&#;?\s"'<>]*(?:signature|token|credential|secret|password|passwd|apikey|api_key|access_key|accesskeyid|auth)[^=&#;?\s"'<>]*|sig|key)=)([^&#;\s"'<>]*)`)
)

// Redact removes the secrets URLs carry from s, wherever they appear in it: the
// password of scheme://user:password@host (a user name alone, which may be a token,
// is removed too) and the values of query parameters that carry signatures,
// credentials or tokens. Everything that shows, logs or stores a URL passes it
// through Redact first; the object it names stays recognisable.
func Redact(s string) string {
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
	return secretParamRE.ReplaceAllString(s, "${1}"+Redacted)
}
