/* c_api_test: a C program that links only libgodali.so and godali.h (plus libjpeg to
 * make its own test images) and runs the ResNet-50 training pipeline end to end. */
#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>

#include "godali.h"

static int failures = 0;

#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, " (last error: %s)\n", godali_last_error());    \
      failures++;                                                     \
    }                                                                 \
  } while (0)

#define MUST(call)                                                                   \
  do {                                                                               \
    godali_status_t s_ = (call);                                                     \
    if (s_ != GODALI_OK) {                                                           \
      fprintf(stderr, "FATAL %s:%d: %s -> %d: %s\n", __FILE__, __LINE__, #call, s_, \
              godali_last_error());                                                  \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

/* write_jpeg encodes a w x h RGB image of known content (a gradient with a checker). */
static void write_jpeg(const char *path, int w, int h, int seed) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    exit(1);
  }
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 92, TRUE);
  jpeg_start_compress(&c, TRUE);
  unsigned char *row = malloc((size_t)w * 3);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      int check = ((x / 16) + (y / 16) + seed) & 1;
      row[3 * x + 0] = (unsigned char)(255 * x / (w - 1));
      row[3 * x + 1] = (unsigned char)(255 * y / (h - 1));
      row[3 * x + 2] = (unsigned char)(check ? 200 : 40);
    }
    JSAMPROW rp = row;
    jpeg_write_scanlines(&c, &rp, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  free(row);
  fclose(f);
}

static const char *resnet_json =
    "{\"batch_size\": 4, \"num_threads\": %d, \"device_id\": null, \"seed\": 12,"
    " \"prefetch_queue_depth\": %d%s,"
    " \"ops\": ["
    "  {\"op\": \"readers.file\", \"name\": \"Reader\", \"outputs\": [\"jpegs\", \"labels\"],"
    "   \"args\": {\"file_root\": \"%s\", \"random_shuffle\": true, \"pad_last_batch\": true}},"
    "  {\"op\": \"decoders.image_random_crop\", \"name\": \"decode\", \"inputs\": [\"jpegs\"],"
    "   \"outputs\": [\"images\"], \"args\": {\"output_type\": \"RGB\","
    "   \"random_aspect_ratio\": [0.8, 1.25], \"random_area\": [0.1, 1.0], \"num_attempts\": 100}},"
    "  {\"op\": \"resize\", \"name\": \"resize\", \"inputs\": [\"images\"], \"outputs\": [\"resized\"],"
    "   \"args\": {\"resize_x\": 224, \"resize_y\": 224, \"interp_type\": \"INTERP_TRIANGULAR\"}},"
    "  {\"op\": \"random.coin_flip\", \"name\": \"coin\", \"outputs\": [\"mirror\"],"
    "   \"args\": {\"probability\": 0.5}},"
    "  {\"op\": \"crop_mirror_normalize\", \"name\": \"cmn\", \"inputs\": [\"resized\"],"
    "   \"arg_inputs\": {\"mirror\": \"mirror\"}, \"outputs\": [\"out\"],"
    "   \"args\": {\"dtype\": \"FLOAT\", \"output_layout\": \"CHW\", \"crop\": [224, 224],"
    "   \"mean\": [123.675, 116.28, 103.53], \"std\": [58.395, 57.12, 57.375]}}"
    " ],"
    " \"outputs\": [\"out\", \"labels\"]}";

/* create_resnet creates (without building) the pipeline; extra adds top-level keys. */
static godali_pipeline_t create_resnet(const char *root, int threads, int depth,
                                       const char *extra) {
  char json[4096];
  snprintf(json, sizeof json, resnet_json, threads, depth, extra, root);
  godali_pipeline_t p = 0;
  MUST(godali_pipeline_create(json, strlen(json), &p));
  return p;
}

static godali_pipeline_t make_resnet(const char *root, int threads) {
  godali_pipeline_t p = create_resnet(root, threads, 2, "");
  MUST(godali_pipeline_build(p));
  return p;
}

/* first_batch_copy returns a malloc'd copy of the first batch's images. */
static float *first_batch_copy(const char *root, int threads, size_t *n) {
  godali_pipeline_t p = make_resnet(root, threads);
  MUST(godali_pipeline_run(p));
  MUST(godali_pipeline_next(p));
  DLManagedTensor *t = NULL;
  MUST(godali_pipeline_output(p, 0, &t));
  size_t count = 1;
  for (int i = 0; i < t->dl_tensor.ndim; i++) count *= (size_t)t->dl_tensor.shape[i];
  float *copy = malloc(count * sizeof(float));
  memcpy(copy, t->dl_tensor.data, count * sizeof(float));
  t->deleter(t);
  MUST(godali_pipeline_destroy(p));
  *n = count;
  return copy;
}

static void *delete_tensor(void *t) {
  DLManagedTensor *m = t;
  m->deleter(m);
  return NULL;
}

static void test_resnet_pipeline(const char *root) {
  godali_pipeline_t p = make_resnet(root, 2);
  int64_t epoch = -1;
  MUST(godali_pipeline_epoch_size(p, "Reader", &epoch));
  CHECK(epoch == 10, "epoch size %lld, want 10", (long long)epoch);
  int nout = 0;
  MUST(godali_pipeline_num_outputs(p, &nout));
  CHECK(nout == 2, "outputs %d", nout);
  const char *name = NULL;
  MUST(godali_pipeline_output_name(p, 1, &name));
  CHECK(strcmp(name, "labels") == 0, "output 1 is %s", name);

  MUST(godali_pipeline_run(p));
  int batches = 0;
  DLManagedTensor *kept = NULL;
  for (;;) {
    godali_status_t s = godali_pipeline_next(p);
    if (s == GODALI_END_OF_EPOCH) break;
    MUST(s);
    batches++;
    godali_batch_info_t info;
    MUST(godali_pipeline_batch_info(p, &info));
    CHECK(info.batch_size == 4, "batch size %lld", (long long)info.batch_size);
    godali_output_info_t oi, li;
    MUST(godali_pipeline_output_info(p, 0, &oi));
    MUST(godali_pipeline_output_info(p, 1, &li));
    CHECK(strcmp(oi.layout, "CHW") == 0 && oi.ndim == 3 && oi.uniform == 1,
          "image output info: layout \"%s\" ndim %d", oi.layout, (int)oi.ndim);
    CHECK(li.layout[0] == '\0' && li.num_samples == 4, "label output info: layout \"%s\"", li.layout);
    DLManagedTensor *img = NULL, *lab = NULL;
    MUST(godali_pipeline_output(p, 0, &img));
    MUST(godali_pipeline_output(p, 1, &lab));
    DLTensor *t = &img->dl_tensor;
    CHECK(t->ndim == 4 && t->shape[0] == 4 && t->shape[1] == 3 && t->shape[2] == 224 &&
              t->shape[3] == 224,
          "image shape ndim=%d", t->ndim);
    CHECK(t->dtype.code == kDLFloat && t->dtype.bits == 32, "image dtype");
    CHECK(t->device.device_type == kDLCPU, "device");
    const float *px = (const float *)t->data;
    float lo = 1e9f, hi = -1e9f;
    for (size_t i = 0; i < 4u * 3 * 224 * 224; i++) {
      if (px[i] < lo) lo = px[i];
      if (px[i] > hi) hi = px[i];
    }
    CHECK(lo >= -2.2f && hi <= 2.7f && hi - lo > 1.0f, "normalized range [%f, %f]", lo, hi);
    CHECK(lab->dl_tensor.ndim == 2 && lab->dl_tensor.shape[0] == 4 && lab->dl_tensor.shape[1] == 1,
          "label shape");
    CHECK(lab->dl_tensor.dtype.code == kDLInt && lab->dl_tensor.dtype.bits == 32, "label dtype");
    const int32_t *l = (const int32_t *)lab->dl_tensor.data;
    for (int i = 0; i < 4; i++) CHECK(l[i] == 0 || l[i] == 1, "label %d", l[i]);
    lab->deleter(lab);
    if (kept) kept->deleter(kept);
    kept = img; /* held across the next batch and past destroy */
  }
  CHECK(batches == 3, "batches per epoch %d, want 3 (10 images, batch 4, padded)", batches);
  CHECK(godali_pipeline_next(p) == GODALI_END_OF_EPOCH, "end of epoch is sticky until reset");
  MUST(godali_pipeline_reset(p));
  MUST(godali_pipeline_next(p));
  MUST(godali_pipeline_destroy(p));

  /* The kept tensor is still readable after destroy; its deleter returns the memory. */
  float sum = 0;
  const float *px = (const float *)kept->dl_tensor.data;
  for (int i = 0; i < 3 * 224 * 224; i++) sum += px[i];
  CHECK(isfinite(sum), "kept tensor readable");
  godali_pool_stats_t st;
  MUST(godali_memory_stats(kDLCPU, &st));
  CHECK(st.exported == 1, "exported tensors alive %lld, want 1", (long long)st.exported);
  /* The deleter runs on a thread the library has never seen. */
  pthread_t th;
  CHECK(pthread_create(&th, NULL, delete_tensor, kept) == 0, "pthread_create");
  pthread_join(th, NULL);
  MUST(godali_memory_stats(kDLCPU, &st));
  CHECK(st.exported == 0 && st.outstanding == 0, "after deleters: exported %lld outstanding %lld",
        (long long)st.exported, (long long)st.outstanding);
}

static void test_reproducible(const char *root) {
  size_t n1 = 0, n2 = 0;
  float *a = first_batch_copy(root, 1, &n1);
  float *b = first_batch_copy(root, 3, &n2);
  CHECK(n1 == n2 && memcmp(a, b, n1 * sizeof(float)) == 0, "same seed, 1 vs 3 threads differ");
  free(a);
  free(b);
}

static void test_bad_calls(const char *root) {
  godali_pipeline_t p = 0;
  CHECK(godali_pipeline_next(0) == GODALI_ERROR_INVALID_HANDLE, "null handle");
  CHECK(godali_pipeline_next(987654) == GODALI_ERROR_INVALID_HANDLE, "unknown handle");
  CHECK(godali_pipeline_create(NULL, 0, &p) == GODALI_ERROR_INVALID_ARGUMENT, "null json");
  const char *unknown = "{\"batch_size\": 2, \"ops\": [{\"op\": \"decoders.imagee\", \"name\": \"dec\","
                        " \"outputs\": [\"x\"]}], \"outputs\": [\"x\"]}";
  CHECK(godali_pipeline_create(unknown, 0, &p) == GODALI_ERROR_INVALID_PIPELINE, "unknown op");
  CHECK(strstr(godali_last_error(), "decoders.imagee") && strstr(godali_last_error(), "dec"),
        "message names node and op");
  const char *badarg = "{\"batch_size\": 2, \"ops\": [{\"op\": \"random.coin_flip\", \"name\": \"c\","
                       " \"outputs\": [\"x\"], \"args\": {\"probabilty\": 0.5}}], \"outputs\": [\"x\"]}";
  CHECK(godali_pipeline_create(badarg, 0, &p) == GODALI_ERROR_INVALID_PIPELINE, "unknown arg");
  CHECK(strstr(godali_last_error(), "probabilty") && strstr(godali_last_error(), "probability"),
        "message names the argument and lists valid ones");
  const char *dangling = "{\"batch_size\": 2, \"ops\": [{\"op\": \"resize\", \"inputs\": [\"nope\"],"
                         " \"outputs\": [\"x\"], \"args\": {\"resize_x\": 8}}], \"outputs\": [\"x\"]}";
  CHECK(godali_pipeline_create(dangling, 0, &p) == GODALI_ERROR_INVALID_PIPELINE, "dangling");
  CHECK(strstr(godali_last_error(), "nope") != NULL, "message names the missing input");

  p = make_resnet(root, 1);
  DLManagedTensor *t = NULL;
  CHECK(godali_pipeline_output(p, 0, &t) == GODALI_ERROR_STATE, "output before next");
  MUST(godali_pipeline_next(p));
  CHECK(godali_pipeline_output(p, 2, &t) == GODALI_ERROR_INVALID_ARGUMENT, "output index 2");
  CHECK(godali_pipeline_output(p, -1, &t) == GODALI_ERROR_INVALID_ARGUMENT, "output index -1");
  CHECK(godali_pipeline_output(p, 0, NULL) == GODALI_ERROR_INVALID_ARGUMENT, "null out");
  MUST(godali_pipeline_destroy(p));
  CHECK(godali_pipeline_destroy(p) == GODALI_ERROR_INVALID_HANDLE, "double destroy");
  CHECK(godali_pipeline_next(p) == GODALI_ERROR_INVALID_HANDLE, "destroyed handle");
}

static void test_bad_file(const char *dir) {
  char good[512], bad[512], json[2048];
  snprintf(good, sizeof good, "%s/good.jpg", dir);
  snprintf(bad, sizeof bad, "%s/broken.jpg", dir);
  write_jpeg(good, 64, 48, 0);
  FILE *f = fopen(bad, "wb");
  fputs("this is not an image", f);
  fclose(f);
  snprintf(json, sizeof json,
           "{\"batch_size\": 1, \"num_threads\": 1, \"ops\": ["
           " {\"op\": \"readers.file\", \"name\": \"r\", \"outputs\": [\"b\", \"l\"],"
           "  \"args\": {\"files\": [\"%s\", \"%s\", \"%s\"]}},"
           " {\"op\": \"decoders.image\", \"inputs\": [\"b\"], \"outputs\": [\"img\"]}],"
           " \"outputs\": [\"img\"]}",
           good, bad, good);
  godali_pipeline_t p = 0;
  MUST(godali_pipeline_create(json, 0, &p));
  MUST(godali_pipeline_build(p));
  MUST(godali_pipeline_next(p));
  CHECK(godali_pipeline_next(p) == GODALI_ERROR_DATA, "broken file fails");
  CHECK(strstr(godali_last_error(), "broken.jpg") != NULL, "message names the file");
  MUST(godali_pipeline_next(p)); /* the pipeline goes on */
  DLManagedTensor *t = NULL;
  MUST(godali_pipeline_output_sample(p, 0, 0, &t));
  CHECK(t->dl_tensor.ndim == 3 && t->dl_tensor.shape[0] == 48 && t->dl_tensor.shape[1] == 64 &&
            t->dl_tensor.shape[2] == 3,
        "decoded HWC shape");
  t->deleter(t);
  CHECK(godali_pipeline_next(p) == GODALI_END_OF_EPOCH, "end of epoch");
  MUST(godali_pipeline_destroy(p));
}

/* test_legacy_names: DALI's former flat operator names (file_reader, image_decoder) are
 * aliases the engine resolves, from C as from Python; godali_operator_schemas lists them. */
static void test_legacy_names(const char *dir) {
  char good[512], json[2048];
  snprintf(good, sizeof good, "%s/legacy.jpg", dir);
  write_jpeg(good, 40, 30, 1);
  snprintf(json, sizeof json,
           "{\"batch_size\": 1, \"num_threads\": 1, \"ops\": ["
           " {\"op\": \"file_reader\", \"name\": \"r\", \"outputs\": [\"b\", \"l\"],"
           "  \"args\": {\"files\": [\"%s\"]}},"
           " {\"op\": \"image_decoder\", \"inputs\": [\"b\"], \"outputs\": [\"img\"]}],"
           " \"outputs\": [\"img\"]}",
           good);
  godali_pipeline_t p = 0;
  MUST(godali_pipeline_create(json, 0, &p));
  MUST(godali_pipeline_build(p));
  MUST(godali_pipeline_next(p));
  DLManagedTensor *t = NULL;
  MUST(godali_pipeline_output_sample(p, 0, 0, &t));
  CHECK(t->dl_tensor.ndim == 3 && t->dl_tensor.shape[0] == 30 && t->dl_tensor.shape[1] == 40,
        "legacy names: decoded HWC shape");
  t->deleter(t);
  MUST(godali_pipeline_destroy(p));
  const char *schemas = NULL;
  MUST(godali_operator_schemas(&schemas));
  CHECK(strstr(schemas, "\"aliases\"") != NULL && strstr(schemas, "\"file_reader\":\"readers.file\"") != NULL,
        "godali_operator_schemas lists the aliases");
}

/* test_last_batch_policy: 5 files in batches of 2 end with a batch of 1 epoch sample:
 * "fill" returns it padded (batch_info.valid 1 of 2), "partial" with 1 sample, "drop" not
 * at all (the epoch ends after 2 batches; the second is not marked last_in_epoch, the
 * dropped one was), as DALI's LastBatchPolicy. */
static void test_last_batch_policy(const char *dir) {
  char files[5][512], json[4096];
  for (int i = 0; i < 5; i++) {
    snprintf(files[i], sizeof files[i], "%s/lbp%d.jpg", dir, i);
    write_jpeg(files[i], 24 + 2 * i, 20, i);
  }
  const char *policies[3] = {"fill", "partial", "drop"};
  const int batches[3] = {3, 3, 2}, last_size[3] = {2, 1, 2};
  for (int k = 0; k < 3; k++) {
    snprintf(json, sizeof json,
             "{\"batch_size\": 2, \"num_threads\": 1, \"last_batch_policy\": \"%s\", \"ops\": ["
             " {\"op\": \"readers.file\", \"name\": \"r\", \"outputs\": [\"b\", \"l\"],"
             "  \"args\": {\"files\": [\"%s\", \"%s\", \"%s\", \"%s\", \"%s\"]}},"
             " {\"op\": \"decoders.image\", \"inputs\": [\"b\"], \"outputs\": [\"img\"]}],"
             " \"outputs\": [\"img\", \"l\"]}",
             policies[k], files[0], files[1], files[2], files[3], files[4]);
    godali_pipeline_t p = 0;
    MUST(godali_pipeline_create(json, 0, &p));
    MUST(godali_pipeline_build(p));
    int n = 0;
    godali_status_t st;
    godali_batch_info_t bi;
    godali_output_info_t oi;
    while ((st = godali_pipeline_next(p)) == GODALI_OK) {
      n++;
      MUST(godali_pipeline_batch_info(p, &bi));
      MUST(godali_pipeline_output_info(p, 1, &oi));
      if (n == batches[k]) {
        CHECK(bi.batch_size == last_size[k] && oi.num_samples == last_size[k],
              "%s: last batch of %lld samples (labels %lld), want %d", policies[k],
              (long long)bi.batch_size, (long long)oi.num_samples, last_size[k]);
        if (k < 2) CHECK(bi.last_in_epoch == 1, "%s: last_in_epoch", policies[k]);
      }
    }
    CHECK(st == GODALI_END_OF_EPOCH, "%s: ends with END_OF_EPOCH (%d)", policies[k], (int)st);
    CHECK(n == batches[k], "%s: %d batches, want %d", policies[k], n, batches[k]);
    MUST(godali_pipeline_destroy(p));
  }
  godali_pipeline_t p = 0;
  CHECK(godali_pipeline_create("{\"batch_size\": 2, \"last_batch_policy\": \"pad\", \"ops\": [], \"outputs\": []}", 0, &p) ==
            GODALI_ERROR_INVALID_PIPELINE && strstr(godali_last_error(), "last_batch_policy") != NULL,
        "an unknown last_batch_policy is refused, naming the key");
}

/* shard_epoch: the labels (file indices) of the next epoch of p, -1 past the batches'
 * valid samples; returns the number of batches and writes each one's valid count. */
static int shard_epoch(godali_pipeline_t p, int *labels, int *valid, int most) {
  int n = 0, at = 0;
  godali_status_t st;
  while ((st = godali_pipeline_next(p)) == GODALI_OK && n < most) {
    godali_batch_info_t bi;
    DLManagedTensor *lab = NULL;
    MUST(godali_pipeline_batch_info(p, &bi));
    MUST(godali_pipeline_output(p, 0, &lab));
    const int32_t *l = (const int32_t *)lab->dl_tensor.data;
    for (int64_t i = 0; i < bi.batch_size; i++) labels[at++] = i < bi.valid ? l[i] : -1;
    lab->deleter(lab);
    valid[n++] = (int)bi.valid;
  }
  CHECK(st == GODALI_END_OF_EPOCH, "epoch ends with END_OF_EPOCH (%d)", (int)st);
  MUST(godali_pipeline_reset(p));
  return n;
}

/* test_last_batch_policy_shards: DALI's iterator counters over a reader without
 * pad_last_batch, set at run time (godali_pipeline_set_last_batch_policy) and counted by
 * godali_pipeline_epoch_batches. 10 files in 3 shards (3, 3 and 4 samples), shard 0,
 * which moves to the next shard every epoch; the reader is one stream, so an epoch goes
 * on where the previous one stopped reading. The expected labels are those DALI 2.4's
 * DALIGenericIterator returns for the same reader (CPU pipeline, fn.readers.file). */
static void test_last_batch_policy_shards(const char *dir) {
  char json[8192], list[4096] = "";
  for (int i = 0; i < 10; i++) {
    char f[512];
    snprintf(f, sizeof f, "%s/lbs%d.jpg", dir, i);
    write_jpeg(f, 16, 16, i);
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s\"%s\"", i ? ", " : "", f);
  }
  const char *fmt =
      "{\"batch_size\": %d, \"num_threads\": 1, \"ops\": ["
      " {\"op\": \"readers.file\", \"name\": \"r\", \"outputs\": [\"b\", \"l\"],"
      "  \"args\": {\"files\": [%s], \"num_shards\": 3, \"shard_id\": 0}}],"
      " \"outputs\": [\"l\"]}";
  int labels[64], valid[16];
  int64_t steps = 0;
  godali_pipeline_t p = 0;

  /* PARTIAL, batches of 4: one batch per epoch, holding what is left of the epoch's
   * shard: 3 of [0 1 2 3], then 3 of [4 5 6 7] (shard 1), then 4 (shard 2). */
  snprintf(json, sizeof json, fmt, 4, list);
  MUST(godali_pipeline_create(json, 0, &p));
  MUST(godali_pipeline_build(p));
  MUST(godali_pipeline_set_last_batch_policy(p, "partial"));
  const int partial[3][4] = {{0, 1, 2, -1}, {4, 5, 6, -1}, {8, 9, 0, 1}};
  for (int e = 0; e < 3; e++) {
    MUST(godali_pipeline_epoch_batches(p, &steps));
    memset(labels, 0xff, sizeof labels);
    int n = shard_epoch(p, labels, valid, 16);
    CHECK(steps == 1 && n == 1, "partial epoch %d: %d batches (epoch_batches %lld), want 1", e, n,
          (long long)steps);
    CHECK(memcmp(labels, partial[e], (size_t)(valid[0]) * sizeof(int)) == 0 && valid[0] == (e < 2 ? 3 : 4),
          "partial epoch %d: labels %d %d %d %d, valid %d", e, labels[0], labels[1], labels[2], labels[3],
          valid[0]);
  }
  /* DROP needs a full batch in the smallest shard (3 samples). */
  CHECK(godali_pipeline_set_last_batch_policy(p, "drop") == GODALI_ERROR_INVALID_ARGUMENT &&
            strstr(godali_last_error(), "drop") != NULL,
        "drop with batches larger than the smallest shard is refused: %s", godali_last_error());
  CHECK(godali_pipeline_set_last_batch_policy(p, "pad") == GODALI_ERROR_INVALID_ARGUMENT,
        "an unknown policy is refused");
  MUST(godali_pipeline_next(p));
  CHECK(godali_pipeline_set_last_batch_policy(p, "fill") == GODALI_ERROR_STATE,
        "the policy changes only at the start of an epoch");
  MUST(godali_pipeline_destroy(p));

  /* DROP, batches of 2: one full batch per epoch (the smallest shard holds one); the
   * incomplete one after it is read and dropped: [0 1], then [4 5], [8 9]. */
  snprintf(json, sizeof json, fmt, 2, list);
  MUST(godali_pipeline_create(json, 0, &p));
  MUST(godali_pipeline_build(p));
  MUST(godali_pipeline_set_last_batch_policy(p, "drop"));
  const int drop[3][2] = {{0, 1}, {4, 5}, {8, 9}};
  for (int e = 0; e < 3; e++) {
    MUST(godali_pipeline_epoch_batches(p, &steps));
    int n = shard_epoch(p, labels, valid, 16);
    CHECK(steps == 1 && n == 1 && valid[0] == 2 && labels[0] == drop[e][0] && labels[1] == drop[e][1],
          "drop epoch %d: %d batches (epoch_batches %lld), labels %d %d", e, n, (long long)steps, labels[0],
          labels[1]);
  }
  MUST(godali_pipeline_destroy(p));

  /* FILL (the default), batches of 2: epoch 0 reads [0 1] [2 3] (2 steps). */
  MUST(godali_pipeline_create(json, 0, &p));
  MUST(godali_pipeline_build(p));
  MUST(godali_pipeline_epoch_batches(p, &steps));
  int n = shard_epoch(p, labels, valid, 16);
  CHECK(steps == 2 && n == 2 && valid[1] == 1 && labels[2] == 2,
        "fill: %d batches (epoch_batches %lld), valid %d", n, (long long)steps, valid[1]);
  MUST(godali_pipeline_destroy(p));
}

/* test_check_node: godali_check_node, the one argument checker (the Python package calls
 * it for each operator call): DALI's words, the nearest declared name, aliases resolved. */
static void test_check_node(void) {
  const char *j = "{\"op\": \"flip\", \"args\": {\"horizontall\": 1}}";
  CHECK(godali_check_node(j, 0) == GODALI_ERROR_INVALID_PIPELINE &&
            strstr(godali_last_error(), "Argument \"horizontall\" is not defined for operator \"flip\".") &&
            strstr(godali_last_error(), "Did you mean \"horizontal\"?"),
        "unknown argument: %s", godali_last_error());
  j = "{\"op\": \"image_decoder\", \"args\": {\"outptu_type\": \"RGB\"}}";
  CHECK(godali_check_node(j, 0) == GODALI_ERROR_INVALID_PIPELINE &&
            strstr(godali_last_error(), "operator \"decoders.image\". Did you mean \"output_type\"?"),
        "an alias's arguments are its operator's: %s", godali_last_error());
  j = "{\"op\": \"rotate\", \"args\": {\"fill_value\": 0}}";
  CHECK(godali_check_node(j, 0) == GODALI_ERROR_INVALID_PIPELINE &&
            strstr(godali_last_error(),
                   "Not all required arguments were specified for op \"rotate\". Please specify values for "
                   "arguments: \"angle\""),
        "missing required argument: %s", godali_last_error());
  MUST(godali_check_node("{\"op\": \"rotate\", \"args\": {\"angle\": 10}}", 0));
  CHECK(godali_check_node("[1]", 0) == GODALI_ERROR_INVALID_ARGUMENT, "not a node object");
  CHECK(godali_check_node(NULL, 0) == GODALI_ERROR_INVALID_ARGUMENT, "NULL");
}

/* count_threads: the process's threads (Linux /proc), -1 if unknown. */
static int count_threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  int n = -1;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  }
  fclose(f);
  return n;
}

/* test_hardening: limits refused at create, skipped files named, out of memory and a
 * missing file_root as statuses of their own, failed builds leaving no thread behind. */
static void test_hardening(const char *dir) {
  char good[512], bad[512], json[4096];
  snprintf(good, sizeof good, "%s/good.jpg", dir);
  snprintf(bad, sizeof bad, "%s/broken.jpg", dir);
  godali_pipeline_t p = 0;

  snprintf(json, sizeof json,
           "{\"batch_size\": 2, \"num_threads\": 1, \"on_error\": \"skip\", \"ops\": ["
           " {\"op\": \"readers.file\", \"name\": \"r\", \"outputs\": [\"b\", \"l\"],"
           "  \"args\": {\"files\": [\"%s\", \"%s\"]}},"
           " {\"op\": \"decoders.image\", \"name\": \"dec\", \"inputs\": [\"b\"], \"outputs\": [\"img\"]}],"
           " \"outputs\": [\"img\"]}",
           good, bad);
  MUST(godali_pipeline_create(json, 0, &p));
  MUST(godali_pipeline_build(p));
  char *skipped = NULL;
  size_t n = 0;
  CHECK(godali_pipeline_skipped(p, &skipped, &n) == GODALI_ERROR_STATE, "skipped before next");
  MUST(godali_pipeline_next(p));
  godali_batch_info_t info;
  MUST(godali_pipeline_batch_info(p, &info));
  CHECK(info.skipped == 1, "skipped %lld", (long long)info.skipped);
  MUST(godali_pipeline_skipped(p, &skipped, &n));
  CHECK(n == strlen(skipped) && strstr(skipped, bad) && strstr(skipped, "\"sample\":1") &&
            strstr(skipped, "\"node\":\"dec\""),
        "skipped files: %s", skipped);
  MUST(godali_free(skipped));
  MUST(godali_pipeline_destroy(p));

  /* Text after the JSON object. */
  size_t len = strlen(json);
  snprintf(json + len, sizeof json - len, " x");
  CHECK(godali_pipeline_create(json, 0, &p) == GODALI_ERROR_INVALID_PIPELINE, "trailing data");
  CHECK(strstr(godali_last_error(), "offset") != NULL, "message gives the offset");

  /* Sizes and counts over the limits: refused at create, naming node and argument. */
  snprintf(json, sizeof json,
           "{\"batch_size\": 2, \"num_threads\": %d, \"ops\": ["
           " {\"op\": \"readers.file\", \"name\": \"r\", \"outputs\": [\"b\", \"l\"],"
           "  \"args\": {\"files\": [\"%s\"]}},"
           " {\"op\": \"decoders.image\", \"inputs\": [\"b\"], \"outputs\": [\"img\"]},"
           " {\"op\": \"resize\", \"name\": \"big\", \"inputs\": [\"img\"], \"outputs\": [\"out\"],"
           "  \"args\": {\"resize_x\": %d, \"resize_y\": %d}}],"
           " \"outputs\": [\"out\"]}",
           2, good, 100000, 100000);
  CHECK(godali_pipeline_create(json, 0, &p) == GODALI_ERROR_INVALID_PIPELINE, "resize 100000");
  CHECK(strstr(godali_last_error(), "big") && strstr(godali_last_error(), "resize_x"),
        "message names node and argument");
  snprintf(json, sizeof json,
           "{\"batch_size\": 2, \"num_threads\": 100000, \"ops\": ["
           " {\"op\": \"readers.file\", \"outputs\": [\"b\", \"l\"], \"args\": {\"files\": [\"%s\"]}}],"
           " \"outputs\": [\"l\"]}",
           good);
  CHECK(godali_pipeline_create(json, 0, &p) == GODALI_ERROR_INVALID_PIPELINE, "num_threads");
  CHECK(strstr(godali_last_error(), "num_threads") != NULL, "message names num_threads");

  /* A missing file_root fails the build, as an invalid argument. */
  snprintf(json, sizeof json,
           "{\"batch_size\": 1, \"ops\": ["
           " {\"op\": \"readers.file\", \"outputs\": [\"b\", \"l\"], \"args\": {\"file_root\": \"%s/nowhere\"}}],"
           " \"outputs\": [\"l\"]}",
           dir);
  MUST(godali_pipeline_create(json, 0, &p));
  CHECK(godali_pipeline_build(p) == GODALI_ERROR_INVALID_ARGUMENT, "missing file_root");
  CHECK(strstr(godali_last_error(), "file_root") && strstr(godali_last_error(), "nowhere"),
        "message names the argument and path");
  MUST(godali_pipeline_destroy(p));

  /* A batch of 65536 x 3 x 16384 x 16384 floats: more than an address space. The build
   * fails with its own status, and 50 such builds leave no thread behind. */
  snprintf(json, sizeof json,
           "{\"batch_size\": 65536, \"num_threads\": 4, \"max_image_pixels\": 0, \"ops\": ["
           " {\"op\": \"readers.file\", \"outputs\": [\"b\", \"l\"], \"args\": {\"files\": [\"%s\"]}},"
           " {\"op\": \"decoders.image\", \"inputs\": [\"b\"], \"outputs\": [\"img\"]},"
           " {\"op\": \"crop_mirror_normalize\", \"inputs\": [\"img\"], \"outputs\": [\"out\"],"
           "  \"args\": {\"crop\": [16384, 16384], \"dtype\": \"FLOAT\", \"out_of_bounds_policy\": \"pad\"}}],"
           " \"outputs\": [\"out\"]}",
           good);
  int before = count_threads();
  for (int i = 0; i < 50; i++) {
    MUST(godali_pipeline_create(json, 0, &p));
    godali_status_t st = godali_pipeline_build(p);
    if (i == 0) {
      CHECK(st == GODALI_ERROR_OUT_OF_MEMORY, "huge batch: status %d", st);
      CHECK(strstr(godali_last_error(), "out of memory") && !strstr(godali_last_error(), "goroutine"),
            "plain message");
    }
    MUST(godali_pipeline_destroy(p));
  }
  int after = count_threads();
  CHECK(before < 0 || after <= before + 8, "threads %d -> %d after 50 failed builds", before, after);
}

/* test_build_retry: a failed build leaves the pipeline as created, and a retry sees the
 * same inputs (it used to count the listed files twice on the second try). */
static void test_build_retry(const char *dir) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"batch_size\": 1, \"num_threads\": 1, \"ops\": ["
           " {\"op\": \"readers.file\", \"name\": \"r\", \"outputs\": [\"b\", \"l\"],"
           "  \"args\": {\"files\": [\"%s/good.jpg\"], \"num_shards\": 2}},"
           " {\"op\": \"decoders.image\", \"inputs\": [\"b\"], \"outputs\": [\"img\"]}],"
           " \"outputs\": [\"img\"]}",
           dir);
  godali_pipeline_t p = 0;
  MUST(godali_pipeline_create(json, 0, &p));
  for (int i = 0; i < 3; i++) {
    CHECK(godali_pipeline_build(p) == GODALI_ERROR_DATA, "build %d: 1 file, 2 shards", i);
    CHECK(strstr(godali_last_error(), "1 files cannot be split into num_shards=2") != NULL,
          "build %d message", i);
    CHECK(godali_pipeline_next(p) == GODALI_ERROR_STATE, "next after a failed build");
  }
  MUST(godali_pipeline_destroy(p));
}

/* step_t is what one godali_pipeline_next gave: the end of the epoch, or a batch. */
typedef struct {
  int end_of_epoch;
  int64_t epoch, iteration;
  int32_t labels[4];
  float *images; /* malloc'd copy */
} step_t;

/* take runs godali_pipeline_next (and, at the end of an epoch, godali_pipeline_reset). */
static step_t take(godali_pipeline_t p) {
  step_t s;
  memset(&s, 0, sizeof s);
  godali_status_t st = godali_pipeline_next(p);
  if (st == GODALI_END_OF_EPOCH) {
    s.end_of_epoch = 1;
    MUST(godali_pipeline_reset(p));
    return s;
  }
  MUST(st);
  godali_batch_info_t info;
  MUST(godali_pipeline_batch_info(p, &info));
  s.epoch = info.epoch;
  s.iteration = info.iteration;
  DLManagedTensor *img = NULL, *lab = NULL;
  MUST(godali_pipeline_output(p, 0, &img));
  MUST(godali_pipeline_output(p, 1, &lab));
  size_t n = 4u * 3 * 224 * 224;
  s.images = malloc(n * sizeof(float));
  memcpy(s.images, img->dl_tensor.data, n * sizeof(float));
  memcpy(s.labels, lab->dl_tensor.data, sizeof s.labels);
  img->deleter(img);
  lab->deleter(lab);
  return s;
}

static void test_checkpoint(const char *root) {
  const char *on = ", \"enable_checkpointing\": true";
  /* 10 images, batch 4: 3 batches per epoch. The workers run 3 batches ahead. */
  godali_pipeline_t p = create_resnet(root, 3, 3, on);
  MUST(godali_pipeline_build(p));
  for (int i = 0; i < 2; i++) free(take(p).images);
  char *ckpt = NULL;
  size_t len = 0;
  MUST(godali_pipeline_checkpoint(p, &ckpt, &len));
  CHECK(ckpt != NULL && len == strlen(ckpt) && strstr(ckpt, "\"godali-checkpoint\"") &&
            strstr(ckpt, "\"iteration\": 2"),
        "checkpoint document: %s", ckpt ? ckpt : "(null)");
  /* The original goes on: its last batch, the end of the epoch, epoch 1's first two. */
  step_t want[4];
  for (int i = 0; i < 4; i++) want[i] = take(p);
  CHECK(!want[0].end_of_epoch && want[0].iteration == 2 && want[1].end_of_epoch &&
            want[2].epoch == 1 && want[2].iteration == 0,
        "original sequence");
  MUST(godali_pipeline_destroy(p));

  /* A fresh pipeline, other threads and depth, restored before build. */
  godali_pipeline_t q = create_resnet(root, 1, 1, on);
  MUST(godali_pipeline_restore(q, ckpt, len));
  MUST(godali_pipeline_build(q));
  for (int i = 0; i < 4; i++) {
    step_t got = take(q);
    CHECK(got.end_of_epoch == want[i].end_of_epoch && got.epoch == want[i].epoch &&
              got.iteration == want[i].iteration,
          "restored step %d: epoch %lld iteration %lld", i, (long long)got.epoch,
          (long long)got.iteration);
    if (!want[i].end_of_epoch) {
      CHECK(memcmp(got.labels, want[i].labels, sizeof got.labels) == 0, "step %d labels", i);
      CHECK(memcmp(got.images, want[i].images, 4u * 3 * 224 * 224 * sizeof(float)) == 0,
            "step %d images differ", i);
    }
    free(got.images);
    free(want[i].images);
  }
  CHECK(godali_pipeline_restore(q, ckpt, 0) == GODALI_ERROR_STATE, "restore after build");
  MUST(godali_pipeline_destroy(q));

  /* Errors: garbage, another pipeline, checkpointing disabled. */
  q = create_resnet(root, 1, 1, on);
  CHECK(godali_pipeline_restore(q, "garbage", 0) == GODALI_ERROR_INVALID_ARGUMENT, "garbage");
  CHECK(strstr(godali_last_error(), "not a godali checkpoint") != NULL, "garbage message");
  CHECK(godali_pipeline_restore(q, ckpt, len / 2) == GODALI_ERROR_INVALID_ARGUMENT, "truncated");
  CHECK(godali_pipeline_restore(q, NULL, 0) == GODALI_ERROR_INVALID_ARGUMENT, "null");
  MUST(godali_pipeline_destroy(q));
  q = create_resnet(root, 1, 1, ", \"enable_checkpointing\": true, \"seed\": 13");
  CHECK(godali_pipeline_restore(q, ckpt, 0) == GODALI_ERROR_INVALID_ARGUMENT, "other seed");
  CHECK(strstr(godali_last_error(), "seed is 12 in the checkpoint, 13 in this pipeline") != NULL,
        "mismatch message names the seed: %s", godali_last_error());
  MUST(godali_pipeline_destroy(q));
  q = create_resnet(root, 1, 1, "");
  char *none = NULL;
  CHECK(godali_pipeline_checkpoint(q, &none, NULL) == GODALI_ERROR_STATE && none == NULL,
        "checkpoint without enable_checkpointing");
  CHECK(strstr(godali_last_error(), "enable_checkpointing") != NULL, "disabled message");
  CHECK(godali_pipeline_restore(q, ckpt, 0) == GODALI_ERROR_STATE, "restore while disabled");
  MUST(godali_pipeline_destroy(q));
  MUST(godali_free(ckpt));
  MUST(godali_free(NULL));
}


/* check_strides: DLPack >= 1.2 wants strides for ndim > 0; godali's are compact
 * row-major, in elements. */
static void check_strides(const DLTensor *t, const char *what) {
  if (t->ndim == 0) return;
  CHECK(t->strides != NULL, "%s: strides NULL for ndim %d", what, t->ndim);
  if (t->strides == NULL) return;
  int64_t want = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    CHECK(t->strides[i] == want, "%s: strides[%d] = %lld, want %lld", what, i,
          (long long)t->strides[i], (long long)want);
    want *= t->shape[i] > 1 ? t->shape[i] : 1;
  }
}

static void test_strides(const char *root) {
  godali_pipeline_t p = make_resnet(root, 1);
  MUST(godali_pipeline_next(p));
  DLManagedTensor *img = NULL, *lab = NULL, *smp = NULL;
  DLManagedTensorVersioned *v = NULL;
  MUST(godali_pipeline_output(p, 0, &img));
  MUST(godali_pipeline_output(p, 1, &lab));
  MUST(godali_pipeline_output_sample(p, 0, 2, &smp));
  MUST(godali_pipeline_output_versioned(p, 0, &v));
  check_strides(&img->dl_tensor, "dense images");
  CHECK(img->dl_tensor.strides && img->dl_tensor.strides[0] == 3 * 224 * 224 &&
            img->dl_tensor.strides[1] == 224 * 224 && img->dl_tensor.strides[2] == 224 &&
            img->dl_tensor.strides[3] == 1,
        "NCHW strides");
  check_strides(&lab->dl_tensor, "labels [4, 1]");
  CHECK(lab->dl_tensor.strides && lab->dl_tensor.strides[0] == 1 && lab->dl_tensor.strides[1] == 1,
        "labels strides");
  check_strides(&smp->dl_tensor, "one sample");
  CHECK(smp->dl_tensor.ndim == 3, "sample ndim %d", smp->dl_tensor.ndim);
  check_strides(&v->dl_tensor, "versioned");
  CHECK(v->version.major == DLPACK_MAJOR_VERSION && v->version.minor == DLPACK_MINOR_VERSION,
        "versioned tensor version %u.%u", v->version.major, v->version.minor);
  /* The arrays belong to the tensor: distinct per export, valid until the deleter. */
  CHECK(img->dl_tensor.strides != v->dl_tensor.strides, "strides shared between exports");
  img->deleter(img);
  lab->deleter(lab);
  smp->deleter(smp);
  v->deleter(v);
  MUST(godali_pipeline_destroy(p));
}

/* test_size_t_lengths: lengths are size_t; a length past 4 GiB is refused rather than
 * read modulo 2^32 (which made 4 GiB + n read the first n bytes). */
static void test_size_t_lengths(const char *root) {
  if (sizeof(size_t) < 8) return;
  char json[4096];
  snprintf(json, sizeof json, resnet_json, 1, 1, ", \"enable_checkpointing\": true", root);
  size_t n = strlen(json);
  godali_pipeline_t p = 0;
  size_t huge = ((size_t)1 << 32) + n;
  CHECK(godali_pipeline_create(json, huge, &p) == GODALI_ERROR_INVALID_ARGUMENT && p == 0,
        "create with a 4 GiB + %zu length", n);
  CHECK(strstr(godali_last_error(), "length") != NULL, "message names the length");
  CHECK(godali_pipeline_create(json, (size_t)-1, &p) == GODALI_ERROR_INVALID_ARGUMENT,
        "create with SIZE_MAX");
  /* An exact length past the document's end is read as given: trailing bytes count. */
  MUST(godali_pipeline_create(json, n, &p));
  char *ckpt = NULL;
  size_t len = 0;
  MUST(godali_pipeline_checkpoint(p, &ckpt, &len));
  CHECK(godali_pipeline_restore(p, ckpt, ((size_t)1 << 32) + len) == GODALI_ERROR_INVALID_ARGUMENT,
        "restore with a 4 GiB + %zu length", len);
  CHECK(godali_pipeline_restore(p, ckpt, (size_t)-1) == GODALI_ERROR_INVALID_ARGUMENT,
        "restore with SIZE_MAX");
  MUST(godali_pipeline_restore(p, ckpt, len));
  MUST(godali_free(ckpt));
  MUST(godali_pipeline_destroy(p));
}

/* test_end_of_epoch_is_not_an_error: GODALI_END_OF_EPOCH leaves godali_last_error() "". */
static void test_end_of_epoch_is_not_an_error(const char *root) {
  godali_pipeline_t p = make_resnet(root, 1);
  godali_status_t s;
  while ((s = godali_pipeline_next(p)) == GODALI_OK) {
  }
  CHECK(s == GODALI_END_OF_EPOCH, "epoch ends with %d", s);
  CHECK(godali_last_error()[0] == 0, "last error after END_OF_EPOCH: \"%s\"", godali_last_error());
  /* A failure before it does not linger either. */
  CHECK(godali_pipeline_output(p, 7, NULL) == GODALI_ERROR_INVALID_ARGUMENT, "bad call");
  CHECK(godali_last_error()[0] != 0, "failure sets the message");
  CHECK(godali_pipeline_next(p) == GODALI_END_OF_EPOCH, "sticky end of epoch");
  CHECK(godali_last_error()[0] == 0, "last error after END_OF_EPOCH: \"%s\"", godali_last_error());
  MUST(godali_pipeline_destroy(p));
}

/* Per-operator times: off by default, on with godali_pipeline_set_profiling before
 * build, refused after it; one epoch counts every sample of every node. */
static void test_profile(const char *root) {
  godali_pipeline_t p = create_resnet(root, 2, 2, "");
  char *json = NULL;
  size_t n = 0;
  MUST(godali_pipeline_profile(p, &json, &n));
  CHECK(strstr(json, "\"enabled\":false") && strstr(json, "\"nodes\":[]"), "profile off: %s", json);
  CHECK(n == strlen(json), "profile length %zu", n);
  godali_free(json);
  MUST(godali_pipeline_set_profiling(p, 1));
  MUST(godali_pipeline_build(p));
  CHECK(godali_pipeline_set_profiling(p, 0) == GODALI_ERROR_STATE, "profiling off after build");
  MUST(godali_pipeline_set_profiling(p, 1)); /* no change: fine */
  while (godali_pipeline_next(p) == GODALI_OK) {
  }
  MUST(godali_pipeline_profile(p, &json, NULL));
  CHECK(strstr(json, "\"enabled\":true") != NULL, "profile on: %s", json);
  /* Reader, decode, coin and cmn (resize is fused into it), 12 samples each: 10 images in
   * batches of 4, the last padded (pad_last_batch) with its last sample twice more. */
  int nodes = 0;
  for (const char *s = json; (s = strstr(s, "\"calls\":")) != NULL; s++, nodes++)
    CHECK(strncmp(s, "\"calls\":12,", 11) == 0, "calls: %.20s", s);
  CHECK(nodes == 4, "%d nodes in %s", nodes, json);
  CHECK(strstr(json, "\"fused\":[\"resize\"]") != NULL, "resize fused into cmn: %s", json);
  godali_free(json);
  CHECK(godali_pipeline_profile(p, NULL, NULL) == GODALI_ERROR_INVALID_ARGUMENT, "NULL out");
  MUST(godali_pipeline_destroy(p));
}

/* replace_first copies src into dst (of size n) with the first `from` replaced by `to`. */
static void replace_first(char *dst, size_t n, const char *src, const char *from, const char *to) {
  const char *at = strstr(src, from);
  if (!at) {
    snprintf(dst, n, "%s", src);
    return;
  }
  snprintf(dst, n, "%.*s%s%s", (int)(at - src), src, to, at + strlen(from));
}

/* num_threads / prefetch_queue_depth "auto": the choice and its reason as JSON, before
 * build and after the measured batches. */
static void test_tuning(const char *root) {
  char fmt1[4096], fmt2[4096], json[4096];
  replace_first(fmt1, sizeof fmt1, resnet_json, "\"num_threads\": %d", "\"num_threads\": \"auto\"");
  replace_first(fmt2, sizeof fmt2, fmt1, "\"prefetch_queue_depth\": %d%s",
                "\"prefetch_queue_depth\": \"auto\"");
  snprintf(json, sizeof json, fmt2, root);
  godali_pipeline_t p = 0;
  MUST(godali_pipeline_create(json, strlen(json), &p));
  char *doc = NULL;
  size_t len = 0;
  MUST(godali_pipeline_tuning(p, &doc, &len));
  CHECK(doc && len == strlen(doc) && strstr(doc, "\"state\":\"initial\"") &&
            strstr(doc, "\"auto_threads\":true") && strstr(doc, "\"usable_cpus\":") &&
            strstr(doc, "usable CPUs"),
        "tuning before build: %s", doc ? doc : "(null)");
  MUST(godali_free(doc));
  MUST(godali_pipeline_build(p));
  /* 10 images, batch 4: 3 batches an epoch; 2 of warm-up, then decided at the end of
   * the epoch that has measured 3 or more. */
  for (int epoch = 0; epoch < 3; epoch++) {
    godali_status_t s;
    while ((s = godali_pipeline_next(p)) == GODALI_OK) {
    }
    CHECK(s == GODALI_END_OF_EPOCH, "epoch %d ends with %d", epoch, s);
    MUST(godali_pipeline_reset(p));
  }
  doc = NULL;
  MUST(godali_pipeline_tuning(p, &doc, NULL));
  CHECK(doc && (strstr(doc, "\"state\":\"adjusted\"") || strstr(doc, "\"state\":\"kept\"")) &&
            strstr(doc, "\"measured\":{") && strstr(doc, "consumer_wait_fraction"),
        "tuning after 3 epochs: %s", doc ? doc : "(null)");
  MUST(godali_free(doc));
  CHECK(godali_pipeline_tuning(p, NULL, NULL) == GODALI_ERROR_INVALID_ARGUMENT, "NULL out");
  /* The memory plan: the header scan found the largest image (640x480, RGB); the
   * random-crop decoder's largest output is its largest window as decoded, below the
   * whole image's 921600 bytes (ops/decoders' TestRandomCropBound checks the bound). */
  doc = NULL;
  len = 0;
  MUST(godali_pipeline_memory_plan(p, &doc, &len));
  const char *mob = doc ? strstr(doc, "\"max_output_bytes\":") : NULL;
  long most = mob ? strtol(mob + strlen("\"max_output_bytes\":"), NULL, 10) : 0;
  CHECK(doc && len == strlen(doc) && strstr(doc, "\"max_width\":640,\"max_height\":480") &&
            most > 0 && most <= 921600 && strstr(doc, "\"host_bytes_worst\":") &&
            strstr(doc, "\"runtime_bytes\":"),
        "memory plan: %s", doc ? doc : "(null)");
  MUST(godali_free(doc));
  CHECK(godali_pipeline_memory_plan(p, NULL, NULL) == GODALI_ERROR_INVALID_ARGUMENT, "NULL out");
  MUST(godali_pipeline_destroy(p));
  /* Fixed values: said so. */
  p = create_resnet(root, 3, 2, "");
  doc = NULL;
  MUST(godali_pipeline_tuning(p, &doc, NULL));
  CHECK(doc && strstr(doc, "\"state\":\"fixed\"") && strstr(doc, "\"num_threads\":3,"),
        "fixed tuning: %s", doc ? doc : "(null)");
  MUST(godali_free(doc));
  MUST(godali_pipeline_destroy(p));
}

/* Several threads share one handle: every call is serialised inside the library, and a
 * destroy in the middle turns the others' later calls into GODALI_ERROR_INVALID_HANDLE. */
typedef struct {
  godali_pipeline_t p;
  int id;
  int destroyer;
  int bad;         /* statuses outside the expected set */
  int after_gone;  /* calls after the handle was seen invalid that did not say so */
  long calls;
} hammer_t;

static int status_expected(godali_status_t s) {
  return s == GODALI_OK || s == GODALI_END_OF_EPOCH || s == GODALI_ERROR_INVALID_HANDLE ||
         s == GODALI_ERROR_STATE; /* output with no current batch: another thread's next ended the epoch */
}

static void *hammer(void *arg) {
  hammer_t *h = arg;
  int gone = 0;
  for (int i = 0; i < 400; i++) {
    godali_status_t s;
    switch ((i + h->id) % 5) {
    case 0:
      s = godali_pipeline_next(h->p);
      break;
    case 1: {
      DLManagedTensor *t = NULL;
      s = godali_pipeline_output(h->p, 0, &t);
      if (s == GODALI_OK) {
        /* Touch both ends: the memory must stay mapped while this thread holds it. */
        const volatile float *px = t->dl_tensor.data;
        float sum = px[0] + px[4 * 3 * 224 * 224 - 1];
        (void)sum;
        t->deleter(t);
      }
      break;
    }
    case 2: {
      godali_batch_info_t info;
      s = godali_pipeline_batch_info(h->p, &info);
      break;
    }
    case 3: {
      DLManagedTensor *t = NULL;
      s = godali_pipeline_output_sample(h->p, 1, 3, &t);
      if (s == GODALI_OK) t->deleter(t);
      break;
    }
    default:
      s = (i % 3 == 0) ? godali_pipeline_reset(h->p) : godali_pipeline_run(h->p);
    }
    h->calls++;
    if (!status_expected(s)) {
      if (h->bad++ < 3) fprintf(stderr, "thread %d: status %d: %s\n", h->id, s, godali_last_error());
    }
    if (gone && s != GODALI_ERROR_INVALID_HANDLE) h->after_gone++;
    if (s == GODALI_ERROR_INVALID_HANDLE) gone = 1;
    if (h->destroyer && i == 200) {
      s = godali_pipeline_destroy(h->p);
      if (s != GODALI_OK) h->bad++;
      gone = 1;
    }
  }
  return NULL;
}

static void test_threads_share_a_pipeline(const char *root) {
  enum { nthreads = 4 };
  godali_pipeline_t p = make_resnet(root, 2);
  pthread_t th[nthreads];
  hammer_t h[nthreads];
  for (int i = 0; i < nthreads; i++) {
    memset(&h[i], 0, sizeof h[i]);
    h[i].p = p;
    h[i].id = i;
    h[i].destroyer = i == 0;
    CHECK(pthread_create(&th[i], NULL, hammer, &h[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < nthreads; i++) {
    pthread_join(th[i], NULL);
    CHECK(h[i].bad == 0, "thread %d: %d unexpected statuses", i, h[i].bad);
    CHECK(h[i].after_gone == 0, "thread %d: %d calls on a destroyed handle did not fail", i,
          h[i].after_gone);
  }
  CHECK(godali_pipeline_next(p) == GODALI_ERROR_INVALID_HANDLE, "destroyed by a thread");
  godali_pool_stats_t st;
  MUST(godali_memory_stats(kDLCPU, &st));
  CHECK(st.exported == 0, "exported tensors alive %lld", (long long)st.exported);
}


/* test_feed_input: external sources fed from C, dense and ragged, read in place; each
 * deleter runs exactly once: when its batch is released, on a refused feed, and on
 * destroy for batches still queued. */
static int deleted[8];
static void count_delete(void *ctx) { deleted[(int)(intptr_t)ctx]++; }

static void test_feed_input(void) {
  const char *desc =
      "{\"batch_size\": 2, \"num_threads\": 2, \"device_id\": null, \"prefetch_queue_depth\": 2,"
      " \"ops\": ["
      "  {\"op\": \"external_source\", \"name\": \"src\", \"outputs\": [\"x\"],"
      "   \"args\": {\"dtype\": \"FLOAT\", \"ndim\": 2, \"layout\": \"HW\"}}],"
      " \"outputs\": [\"x\"]}";
  godali_pipeline_t p = 0;
  MUST(godali_pipeline_create(desc, 0, &p));
  MUST(godali_pipeline_build(p));
  memset(deleted, 0, sizeof deleted);
  DLDataType f32 = {kDLFloat, 32, 1};

  /* Dense: 2 samples of 2x3. */
  float dense[12];
  for (int i = 0; i < 12; i++) dense[i] = (float)i;
  int64_t shape[3] = {2, 2, 3};
  MUST(godali_pipeline_feed_input(p, "src", dense, f32, 2, shape, "HW", 0, count_delete,
                                  (void *)(intptr_t)0));
  /* Ragged: 1x2 and 3x1. */
  float a[2] = {100, 101}, b[3] = {200, 201, 202};
  const void *ptrs[2] = {a, b};
  int64_t shapes[4] = {1, 2, 3, 1};
  MUST(godali_pipeline_feed_input_ragged(p, "src", 2, ptrs, f32, 2, shapes, NULL, 0,
                                         count_delete, (void *)(intptr_t)1));
  int64_t queued = -1;
  MUST(godali_pipeline_feed_queued(p, "src", &queued));
  CHECK(queued >= 0 && queued <= 2, "queued %lld", (long long)queued);

  /* Refused feeds: the deleter runs once, nothing is queued. */
  DLDataType u8 = {kDLUInt, 8, 1};
  CHECK(godali_pipeline_feed_input(p, "src", dense, u8, 2, shape, NULL, 0, count_delete,
                                   (void *)(intptr_t)2) == GODALI_ERROR_INVALID_ARGUMENT,
        "wrong dtype accepted");
  CHECK(strstr(godali_last_error(), "dtype FLOAT") != NULL, "message: %s", godali_last_error());
  CHECK(godali_pipeline_feed_input(p, "nope", dense, f32, 2, shape, NULL, 0, count_delete,
                                   (void *)(intptr_t)3) == GODALI_ERROR_INVALID_ARGUMENT,
        "unknown name accepted");
  CHECK(strstr(godali_last_error(), "\"nope\"") != NULL, "message: %s", godali_last_error());
  int64_t shape1[2] = {2, 6};
  CHECK(godali_pipeline_feed_input(p, "src", dense, f32, 1, shape1, NULL, 0, count_delete,
                                   (void *)(intptr_t)4) == GODALI_ERROR_INVALID_ARGUMENT,
        "wrong ndim accepted");
  CHECK(godali_pipeline_feed_input(p, "src", dense, f32, 2, shape, "WH", 0, count_delete,
                                   (void *)(intptr_t)5) == GODALI_ERROR_INVALID_ARGUMENT,
        "wrong layout accepted");
  CHECK(godali_pipeline_feed_input(999999, "src", dense, f32, 2, shape, NULL, 0, count_delete,
                                   (void *)(intptr_t)6) == GODALI_ERROR_INVALID_HANDLE,
        "invalid handle accepted");
  for (int k = 2; k <= 6; k++) CHECK(deleted[k] == 1, "refused feed %d: deleter ran %d times", k, deleted[k]);

  MUST(godali_pipeline_next(p));
  DLManagedTensor *t = NULL;
  MUST(godali_pipeline_output(p, 0, &t));
  const float *v = (const float *)t->dl_tensor.data;
  CHECK(t->dl_tensor.ndim == 3 && t->dl_tensor.shape[0] == 2 && t->dl_tensor.shape[2] == 3,
        "dense output shape");
  for (int i = 0; i < 12; i++) CHECK(v[i] == (float)i, "dense[%d] = %g", i, v[i]);
  t->deleter(t);
  CHECK(deleted[0] == 0, "dense feed released while its batch is current");

  MUST(godali_pipeline_next(p));
  CHECK(deleted[0] == 1, "dense feed: deleter ran %d times after its batch, want 1", deleted[0]);
  DLManagedTensor *s1 = NULL;
  MUST(godali_pipeline_output_sample(p, 0, 1, &s1));
  CHECK(s1->dl_tensor.shape[0] == 3 && s1->dl_tensor.shape[1] == 1, "ragged sample 1 shape");
  CHECK(((const float *)s1->dl_tensor.data)[2] == 202.0f, "ragged sample 1 value");
  s1->deleter(s1);

  /* Nothing more fed: next fails at once (it does not wait for a feed). */
  CHECK(godali_pipeline_next(p) == GODALI_ERROR_STATE, "next without a feed");
  CHECK(deleted[1] == 1, "ragged feed: deleter ran %d times, want 1", deleted[1]);

  /* End of epoch, then destroy with a batch still queued after the marker. */
  MUST(godali_pipeline_feed_end_of_epoch(p, "src"));
  CHECK(godali_pipeline_next(p) == GODALI_END_OF_EPOCH, "end-of-epoch marker");
  float *heap = malloc(sizeof dense);
  memcpy(heap, dense, sizeof dense);
  MUST(godali_pipeline_feed_input(p, "src", heap, f32, 2, shape, NULL, 0, count_delete,
                                  (void *)(intptr_t)7));
  /* A copied feed: the deleter has run when the call returns. */
  float copied[12] = {0};
  MUST(godali_pipeline_feed_input(p, "src", copied, f32, 2, shape, NULL, GODALI_FEED_COPY,
                                  count_delete, (void *)(intptr_t)4));
  CHECK(deleted[4] == 2, "GODALI_FEED_COPY: deleter ran %d times by return", deleted[4] - 1);
  MUST(godali_pipeline_destroy(p));
  CHECK(deleted[7] == 1, "queued feed: deleter ran %d times on destroy, want 1", deleted[7]);
  free(heap);
  for (int k = 0; k < 8; k++) CHECK(deleted[k] == (k == 4 ? 2 : 1), "deleter %d ran %d times", k, deleted[k]);
}

/* A host function that calls into its own pipeline: every such call must fail at once
 * with GODALI_ERROR_STATE (it would wait for the batch the function computes), while a
 * call into another pipeline works. It records the order of its calls too. */
typedef struct {
  godali_pipeline_t self, other;
  int calls, wrong_handle;
  int64_t iterations[8];
  godali_status_t st[7];
  char msg[7][600];
} reentry_t;

static int32_t reentrant_fn(void *ctx, const godali_host_call_t *call) {
  reentry_t *r = (reentry_t *)ctx;
  if (r->calls < 8) r->iterations[r->calls] = call->iteration;
  r->calls++;
  if (call->pipeline != r->self) r->wrong_handle = 1;
  int ready = 0, n = 0;
  godali_status_t st[7];
  st[0] = godali_pipeline_next(r->self);
  snprintf(r->msg[0], sizeof r->msg[0], "%s", godali_last_error());
  st[1] = godali_pipeline_reset(r->self);
  snprintf(r->msg[1], sizeof r->msg[1], "%s", godali_last_error());
  st[2] = godali_pipeline_destroy(r->self);
  snprintf(r->msg[2], sizeof r->msg[2], "%s", godali_last_error());
  st[3] = godali_pipeline_wait(r->self, 10, &ready);
  snprintf(r->msg[3], sizeof r->msg[3], "%s", godali_last_error());
  st[4] = godali_pipeline_num_outputs(r->self, &n);
  snprintf(r->msg[4], sizeof r->msg[4], "%s", godali_last_error());
  st[5] = godali_pipeline_interrupt(r->self); /* takes no lock: allowed */
  st[6] = godali_pipeline_next(r->other);     /* another pipeline: allowed */
  snprintf(r->msg[6], sizeof r->msg[6], "%s", godali_last_error());
  if (r->calls == 1) memcpy(r->st, st, sizeof st);
  for (int k = 0; k < 7; k++)
    if (st[k] != r->st[k]) r->wrong_handle = 2; /* every call answers the same */
  for (int64_t i = 0; i < call->num_samples; i++) {
    if (godali_host_call_output(call->call, 0, i, &call->inputs[i]) != GODALI_OK) return 1;
  }
  return 0;
}

static void test_host_function_reentry(void) {
  const char *src_only =
      "{\"batch_size\": 2, \"num_threads\": 1, \"device_id\": null, \"prefetch_queue_depth\": 1,"
      " \"ops\": [{\"op\": \"external_source\", \"name\": \"src\", \"outputs\": [\"x\"],"
      "   \"args\": {\"dtype\": \"FLOAT\", \"ndim\": 1}}], \"outputs\": [\"x\"]}";
  reentry_t r;
  memset(&r, 0, sizeof r);
  uint64_t fid = 0;
  MUST(godali_host_function_register(reentrant_fn, &r, &fid));
  char desc[1024];
  snprintf(desc, sizeof desc,
           "{\"batch_size\": 2, \"num_threads\": 2, \"device_id\": null, \"prefetch_queue_depth\": 2,"
           " \"ops\": [{\"op\": \"external_source\", \"name\": \"src\", \"outputs\": [\"x\"],"
           "   \"args\": {\"dtype\": \"FLOAT\", \"ndim\": 1}},"
           "  {\"op\": \"python_function\", \"name\": \"fn\", \"inputs\": [\"x\"], \"outputs\": [\"y\"],"
           "   \"args\": {\"function_id\": %llu}}], \"outputs\": [\"y\"]}",
           (unsigned long long)fid);
  MUST(godali_pipeline_create(desc, 0, &r.self));
  MUST(godali_pipeline_create(src_only, 0, &r.other));
  MUST(godali_pipeline_build(r.self));
  MUST(godali_pipeline_build(r.other));
  DLDataType f32 = {kDLFloat, 32, 1};
  float data[4][6];
  int64_t shape[2] = {2, 3};
  for (int b = 0; b < 4; b++) {
    for (int i = 0; i < 6; i++) data[b][i] = (float)(10 * b + i);
    MUST(godali_pipeline_feed_input(r.other, "src", data[b], f32, 1, shape, NULL, GODALI_FEED_COPY,
                                    NULL, NULL));
    MUST(godali_pipeline_feed_input(r.self, "src", data[b], f32, 1, shape, NULL, GODALI_FEED_COPY,
                                    NULL, NULL));
  }
  for (int b = 0; b < 4; b++) {
    godali_status_t s = godali_pipeline_next(r.self);
    CHECK(s == GODALI_OK, "batch %d: status %d", b, s);
    if (s != GODALI_OK) continue;
    DLManagedTensor *t = NULL;
    MUST(godali_pipeline_output(r.self, 0, &t));
    const float *v = (const float *)t->dl_tensor.data;
    for (int i = 0; i < 6; i++) CHECK(v[i] == data[b][i], "batch %d [%d] = %g", b, i, v[i]);
    t->deleter(t);
  }
  CHECK(r.calls == 4, "host function called %d times, want 4", r.calls);
  for (int b = 0; b < 4 && b < r.calls; b++)
    CHECK(r.iterations[b] == b, "call %d ran iteration %lld: want the batches in order", b,
          (long long)r.iterations[b]);
  CHECK(r.wrong_handle == 0, "call->pipeline or the answers differ between calls (%d)", r.wrong_handle);
  const char *names[5] = {"godali_pipeline_next", "godali_pipeline_reset", "godali_pipeline_destroy",
                          "godali_pipeline_wait", "godali_pipeline_num_outputs"};
  for (int k = 0; k < 5; k++) {
    CHECK(r.st[k] == GODALI_ERROR_STATE, "%s from inside its host function: status %d", names[k], r.st[k]);
    char want[160];
    snprintf(want, sizeof want, "%s called from inside the host function of node \"fn\"", names[k]);
    CHECK(strncmp(r.msg[k], want, strlen(want)) == 0, "%s: message %s", names[k], r.msg[k]);
  }
  CHECK(r.st[5] == GODALI_OK, "godali_pipeline_interrupt: status %d", r.st[5]);
  CHECK(r.st[6] == GODALI_OK, "next of another pipeline from a host function: %d %s", r.st[6], r.msg[6]);
  /* The refused destroy left the pipeline alive: destroyed now, once. */
  CHECK(godali_pipeline_destroy(r.self) == GODALI_OK, "destroy after the host function");
  CHECK(godali_pipeline_destroy(r.self) == GODALI_ERROR_INVALID_HANDLE, "second destroy");
  MUST(godali_pipeline_destroy(r.other));
  MUST(godali_host_function_unregister(fid));
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "c_api_data";
  char root[512], cls[600], path[700];
  mkdir(dir, 0755);
  snprintf(root, sizeof root, "%s/train", dir);
  mkdir(root, 0755);
  const char *classes[2] = {"cat", "dog"};
  const int sizes[5][2] = {{320, 240}, {500, 375}, {180, 260}, {640, 480}, {256, 256}};
  for (int c = 0; c < 2; c++) {
    snprintf(cls, sizeof cls, "%s/%s", root, classes[c]);
    mkdir(cls, 0755);
    for (int i = 0; i < 5; i++) {
      snprintf(path, sizeof path, "%s/img%d.jpg", cls, i);
      write_jpeg(path, sizes[i][0], sizes[i][1], i + c);
    }
  }
  int major = 0, minor = 0, patch = 0;
  MUST(godali_version(&major, &minor, &patch));
  const char *flavour = NULL;
  MUST(godali_flavour(&flavour));
  printf("godali %d.%d.%d (%s)\n", major, minor, patch, flavour);

  test_resnet_pipeline(root);
  test_reproducible(root);
  test_bad_calls(root);
  test_bad_file(dir);
  test_legacy_names(dir);
  test_last_batch_policy(dir);
  test_last_batch_policy_shards(dir);
  test_check_node();
  test_hardening(dir);
  test_build_retry(dir);
  test_checkpoint(root);
  test_strides(root);
  test_size_t_lengths(root);
  test_end_of_epoch_is_not_an_error(root);
  test_profile(root);
  test_tuning(root);
  test_threads_share_a_pipeline(root);
  test_feed_input();
  test_host_function_reentry();

  int64_t live = -1;
  MUST(godali_live_pipelines(&live));
  CHECK(live == 0, "live pipelines %lld", (long long)live);
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("c_api_test: all checks passed\n");
  return 0;
}
