package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// pageServer answers objects.list of bucket "b" from names, maxResults a page, with
// the index of the next name as its page token; repeat makes it answer the first
// token again and again (a broken server).
func pageServer(t *testing.T, names []string, repeat bool) (*httptest.Server, *atomic.Int64) {
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/storage/v1/b/b/o" {
			http.NotFound(w, r)
			return
		}
		pages.Add(1)
		q := r.URL.Query()
		if q.Get("fields") != "items(name,size,generation),nextPageToken" {
			t.Errorf("fields %q", q.Get("fields"))
		}
		var sel []string
		for _, n := range names {
			if strings.HasPrefix(n, q.Get("prefix")) {
				sel = append(sel, n)
			}
		}
		start, _ := strconv.Atoi(q.Get("pageToken"))
		size, _ := strconv.Atoi(q.Get("maxResults"))
		end := min(start+size, len(sel))
		var items []map[string]string
		for i, n := range sel[start:end] {
			items = append(items, map[string]string{"name": n, "size": strconv.Itoa(start + i), "generation": fmt.Sprint(1000 + start + i)})
		}
		out := map[string]any{"items": items}
		if end < len(sel) {
			out["nextPageToken"] = strconv.Itoa(end)
			if repeat {
				out["nextPageToken"] = strconv.Itoa(size)
			}
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv, &pages
}

func TestGCSListPageTokens(t *testing.T) {
	var names []string
	for i := range 23 {
		names = append(names, fmt.Sprintf("p/%02d.bin", i))
	}
	names = append(names, "p/dir/", "q/other.bin")
	srv, pages := pageServer(t, names, false)
	gcsEnv(t, srv.URL)
	st := NewStore(Options{GCS: GCSOptions{PageSize: 5}})
	defer st.CloseIdleConnections()
	got, err := st.List(context.Background(), "gs://b/p/")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 23 || pages.Load() != 5 {
		t.Fatalf("%d objects in %d pages, want 23 (the placeholder p/dir/ dropped) in 5", len(got), pages.Load())
	}
	for i, o := range got {
		if o.URL != fmt.Sprintf("gs://b/p/%02d.bin", i) || o.Size != int64(i) || o.ETag != fmt.Sprintf(`"%d"`, 1000+i) {
			t.Errorf("object %d: %+v", i, o)
		}
	}
	srv2, _ := pageServer(t, names, true)
	gcsEnv(t, srv2.URL)
	st2 := NewStore(Options{GCS: GCSOptions{PageSize: 5}})
	defer st2.CloseIdleConnections()
	if _, err := st2.List(context.Background(), "gs://b/p/"); err == nil || !strings.Contains(err.Error(), "repeated a page token") {
		t.Fatalf("a server repeating its page token: %v", err)
	}
}
