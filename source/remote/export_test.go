package remote

import (
	"testing"

	"github.com/godali/godali/source/remote/internal/faultproxy"
)

// For the end-to-end reader tests of package remote_test.
var (
	MotoServer  = motoServer
	NginxServer = nginxServer
	S3Env       = s3Env
	TestName    = testName
)

func PutObjects(t *testing.T, endpoint, bucket string, data map[string][]byte) {
	direct := NewStore(Options{S3: S3Options{Endpoint: endpoint}})
	putObjects(t, direct, bucket, data)
	direct.CloseIdleConnections()
}

func NginxFixture(t *testing.T, data map[string][]byte, f faultproxy.Faults) (string, string, *faultproxy.Proxy) {
	return nginxFixture(t, data, f)
}
