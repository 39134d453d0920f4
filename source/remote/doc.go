// Package remote reads training data where users keep it: S3 and S3-compatible object
// stores (s3://bucket/prefix/...), Azure Blob Storage (az://container/prefix/..., and
// https://ACCOUNT.blob.core.windows.net/...), Google Cloud Storage (gs://bucket/...),
// web servers (http:// and https://) and local paths, behind one small interface. It knows nothing of the engine; readers use it to list
// and fetch the files they decode.
//
// # Pieces
//
//   - Store opens (size + ETag), reads ranges of, and lists objects by URL scheme.
//     S3 listing is paginated (ListObjectsV2), as are Azure's (List Blobs, continuation
//     markers) and GCS's (objects.list, page tokens); HTTP has no listing, so readers of
//     http(s) data need an index file naming the objects (ErrListUnsupported).
//     Servers that ignore Range are handled by reading the full body.
//   - Fetcher keeps many requests in flight (FetchOptions.Concurrency, io_concurrency,
//     default 32) from a pool of that many goroutines per stream, reads ahead of the
//     consumer in the order the caller gives (Stream, results delivered in that order),
//     splits large objects into ChunkSize ranged reads run in parallel, and retries
//     5xx/408/429 answers, timeouts, connection resets and cut bodies with exponential
//     backoff (RetryPolicy), then fails with an *Error naming the object URL. Every
//     attempt of every request (HEAD, ranged GET, listing page) is bounded by
//     FetchOptions.AttemptTimeout, body included. Cancelling the context stops every
//     request at once (readers cancel it when their pipeline closes); Close waits for
//     the stream's goroutines. StreamUpTo refuses objects over a size from the first
//     response, before their bodies are read.
//     OpenReader reads one large shard front to back with chunks fetched ahead.
//   - FS implements source.Source (the one interface readers list and read through,
//     source.Local being the local one) over a Fetcher: opens and ranged reads with
//     retries, whole-object reads chunked and cached, S3 listing turned into
//     directory entries.
//   - Cache (optional, FetchOptions.Cache) keeps whole objects in a directory bounded
//     in size with LRU eviction. An entry is used only while its ETag is current: with
//     a known ETag (from a listing) it costs no request, otherwise one conditional
//     request (If-None-Match, answered 304). Entries are written to a temporary file,
//     fsynced and renamed, so partial files are never used; each carries a CRC-32C of
//     its bytes, checked on read: an entry damaged at rest is dropped and fetched again.
//
// # Secrets
//
// URLs may carry a password (http://user:password@host/...) or presigned query
// parameters (X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token). *Error
// messages, fs.PathError paths and cache entry headers show them through
// source.Redact, never in clear. Checkpoints identify objects by source.Location (the
// URL without credentials, signatures and signing fields), so that they survive a URL
// signed again. A URL presigned for GET is refused for HEAD by S3 and GCS (the method
// is signed): a HEAD answered 403 or 405 is followed by a one-byte ranged GET.
//
// # Environment
//
// S3 settings come from the AWS SDK for Go v2's standard chain; S3Options overrides.
//
//	AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN  credentials
//	AWS_PROFILE, AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE    profiles (also SSO, web identity, IMDS)
//	AWS_REGION (or AWS_DEFAULT_REGION, or the profile)           region; us-east-1 if none
//	AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL                        endpoint of an S3-compatible store (MinIO, Ceph, ...)
//	AWS_CA_BUNDLE                                                extra CA certificates
//	GODALI_S3_PATH_STYLE=true|false|auto                         path-style addressing (bucket in the path, not the
//	                                                             host name); auto (the default) uses it whenever a
//	                                                             custom endpoint is set
//	GODALI_S3_ANONYMOUS=1                                        unsigned requests, for public buckets
//
// Azure Blob (azure.go: the REST API over net/http, Shared Key signing with
// HMAC-SHA256 as Microsoft documents it) reads the variables of Azure's tools:
//
//	AZURE_STORAGE_CONNECTION_STRING   AccountName, AccountKey, SharedAccessSignature, BlobEndpoint,
//	                                  EndpointSuffix, DefaultEndpointsProtocol, UseDevelopmentStorage
//	AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY   account and key (Shared Key)
//	AZURE_STORAGE_SAS_TOKEN           SAS token
//	AZURE_STORAGE_SERVICE_ENDPOINT    Blob endpoint (emulators, sovereign clouds)
//	GODALI_AZURE_STORAGE_TOKEN        OAuth bearer token (Azure's tools have no variable for one)
//
// GCS (gcs.go: the JSON API; an object's generation stands for its ETag):
//
//	GOOGLE_OAUTH_ACCESS_TOKEN         access token
//	GOOGLE_APPLICATION_CREDENTIALS    service-account key file (RS256 JWT exchanged at token_uri)
//	STORAGE_EMULATOR_HOST             emulator endpoint
//	GODALI_GCS_ANONYMOUS=1            no credentials (also the default without any)
//
// HTTP(S) requests honour HTTP_PROXY, HTTPS_PROXY and NO_PROXY.
//
// # Tests
//
// The tests start real servers on loopback: nginx, moto (an S3-compatible server
// speaking signed S3), Azurite (Azure Blob, checking Shared Key and SAS signatures) and
// fake-gcs-server, all installed by scripts/setup.sh, behind a fault proxy
// (internal/faultproxy) that adds latency, answers 503s and cuts bodies short. They
// skip when a server is missing, except under CI=true or GODALI_STRICT_REFERENCES=1,
// where that is a failure.
// fetchbench (a program in this directory) prints throughput against io_concurrency
// for added latencies.
package remote
