package remote

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/godali/godali/source/remote/internal/faultproxy"
)

// For the end-to-end reader tests of package remote_test.
var (
	MotoServer  = motoServer
	NginxServer = nginxServer
	S3Env       = s3Env
	TestName    = testName

	AzuriteServer  = azuriteServer
	FakeGCSServer  = fakeGCSServer
	AzureEnv       = azureEnv
	GCSEnv         = gcsEnv
	PutAzure       = putAzure
	PutGCS         = putGCS
	BucketName     = bucketName
	AzuriteAccount = azuriteAccount
)

func PutObjects(t *testing.T, endpoint, bucket string, data map[string][]byte) {
	direct := NewStore(Options{S3: S3Options{Endpoint: endpoint}})
	putObjects(t, direct, bucket, data)
	direct.CloseIdleConnections()
}

func NginxFixture(t *testing.T, data map[string][]byte, f faultproxy.Faults) (string, string, *faultproxy.Proxy) {
	return nginxFixture(t, data, f)
}

// PresignGet is a URL of bucket/key on the S3 endpoint presigned for GET, valid for
// expires.
func PresignGet(t *testing.T, endpoint, bucket, key string, expires time.Duration) string {
	t.Helper()
	direct := NewStore(Options{S3: S3Options{Endpoint: endpoint}})
	defer direct.CloseIdleConnections()
	req, err := s3.NewPresignClient(s3Client(t, direct)).PresignGetObject(context.Background(),
		&s3.GetObjectInput{Bucket: &bucket, Key: &key}, s3.WithPresignExpires(expires))
	if err != nil {
		t.Fatal(err)
	}
	return req.URL
}
