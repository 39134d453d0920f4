/*
 * godali.h: the C ABI of libgodali.so (CPU flavour) and libgodali_cuda.so (CUDA flavour).
 *
 * This hand-written header is the contract; the header cgo generates is an implementation
 * detail. Conventions:
 *   - every function returns a godali_status_t; outputs are written through the last
 *     parameters, and only when the call returns GODALI_OK;
 *   - on failure (a negative status), godali_last_error() returns a message for the
 *     calling thread that stays readable until that thread's next godali call; after
 *     GODALI_OK and GODALI_END_OF_EPOCH, which are not failures, it returns "";
 *   - a failed call leaves its outputs unwritten and the pipeline as it was, unless the
 *     function's comment ("After a failure: ...") says otherwise; that comment also says
 *     whether the call may be retried. GODALI_ERROR_INVALID_ARGUMENT and
 *     GODALI_ERROR_INVALID_HANDLE never change anything. After GODALI_ERROR_INTERNAL
 *     (a bug) or GODALI_ERROR_CUDA the pipeline's state is unknown: destroy it;
 *   - pipelines are opaque integer handles; 0 is never a valid handle, and a destroyed
 *     handle is rejected with GODALI_ERROR_INVALID_HANDLE (it is never reused);
 *   - no function crashes its host process on bad arguments: they return an error status.
 *
 * Pipelines are described in JSON (docs/pipeline.md). Limits, checked when a pipeline is
 * created (GODALI_ERROR_INVALID_PIPELINE naming the key, node and argument): num_threads
 * <= 256, batch_size <= 65536, prefetch_queue_depth <= 64; every operator output whose
 * size is known at build fits max_image_pixels (height x width; default 178956970, 0: no
 * limit) and byte sizes that fit in memory arithmetic. An output size known only at run
 * time (resize_shorter of a large image) is checked before memory is given to it: the
 * sample fails with GODALI_ERROR_DATA naming its file (on_error = "skip" replaces it).
 *
 * Threads: a pipeline may be used from any thread and from several at once. The library
 * serialises the calls on one pipeline (a lock per handle, held for the whole call): a
 * godali_pipeline_next waiting for its batch delays the other threads' calls on that
 * pipeline, including godali_pipeline_destroy, which waits for the calls in flight;
 * calls made after it, or waiting when it ran, return GODALI_ERROR_INVALID_HANDLE.
 * Pointers the library returned (output names, the current batch's tensors) stay what
 * their lifetime notes say; "the current batch" is whichever another thread's
 * godali_pipeline_next made current, so threads that share a pipeline must agree on
 * who calls next. Calls on different pipelines run in parallel.
 * fork(): the Go runtime inside the library does not survive fork(). A child process must
 * not call into the library after its parent did; create pipelines after forking.
 *
 * CUDA flavour: libgodali_cuda.so initialises CUDA when it is loaded and terminates the
 * process if that fails (a property of gorgonia.org/cu). Before loading it, check that
 * libcuda.so.1's cuInit(0) returns 0 and cuDeviceGetCount() reports at least one device;
 * otherwise load libgodali.so. Never load both flavours into one process.
 */
#ifndef GODALI_H_
#define GODALI_H_

#include <stddef.h>
#include <stdint.h>

#include "dlpack/dlpack.h"

/* An older dlpack.h included first (libtorch 1.x bundles DLPack 0.6 as ATen/dlpack.h,
 * under the same include guard) hides the vendored one: DLTensor, DLDevice and
 * DLDataType are the same there, but DLPack 1.0's versioned managed tensor is missing.
 * Declare it, with the layout of DLPack 1.x, so that godali.h may come after any torch
 * header. */
#ifndef DLPACK_MAJOR_VERSION
#define GODALI_DLPACK_COMPAT 1
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#ifdef __cplusplus
extern "C" {
#endif
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#ifdef __cplusplus
}
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define GODALI_VERSION_MAJOR 0
#define GODALI_VERSION_MINOR 1
#define GODALI_VERSION_PATCH 0

/* godali_status_t: result of every call. Negative values are errors. */
typedef enum {
  GODALI_OK = 0,
  /* The pipeline has delivered every batch of the current epoch; call
   * godali_pipeline_reset() to start the next one. Not an error. */
  GODALI_END_OF_EPOCH = 1,
  GODALI_ERROR_INVALID_ARGUMENT = -1, /* null pointer, bad index, bad value */
  GODALI_ERROR_INVALID_HANDLE = -2,   /* unknown or destroyed pipeline handle */
  GODALI_ERROR_INVALID_PIPELINE = -3, /* JSON description rejected */
  GODALI_ERROR_DATA = -4,             /* a sample could not be read or decoded */
  GODALI_ERROR_STATE = -5,            /* call out of order (e.g. next before build) */
  GODALI_ERROR_NO_CUDA = -6,          /* GPU requested but this is the CPU flavour */
  GODALI_ERROR_CUDA = -7,             /* a CUDA call failed */
  GODALI_ERROR_OUT_OF_MEMORY = -8,    /* the system refused memory (mmap, a pool), or
                                         CUDA did (CUDA_ERROR_OUT_OF_MEMORY from a device
                                         or pinned allocation); the message says how
                                         much was asked for */
  GODALI_ERROR_INTERNAL = -100        /* a bug in godali: please report it */
} godali_status_t;

/* godali_pipeline_t: opaque handle of a pipeline. 0 is never valid. */
typedef uint64_t godali_pipeline_t;

/* godali_batch_info_t: facts about the current batch. */
typedef struct {
  int64_t batch_size;   /* samples in the batch: the pipeline's batch_size, fewer in an
                           epoch's last batch with last_batch_policy "partial" (or with
                           external sources feeding smaller batches) */
  int64_t valid;        /* leading samples that belong to this epoch; the rest is padding
                           (pad_last_batch repeats the last sample, otherwise the shard
                           wraps around) */
  int64_t epoch;        /* epoch number, from 0 */
  int64_t iteration;    /* batch number within the epoch, from 0 */
  int32_t last_in_epoch;/* 1 when this is the epoch's last batch */
  int32_t reserved;
  int64_t skipped;      /* samples replaced in this batch because they failed to decode
                           (on_error = "skip") */
} godali_batch_info_t;

/* GODALI_MAX_LAYOUT: the size of godali_output_info_t.layout, NUL included. */
#define GODALI_MAX_LAYOUT 16

/* The most dimensions a sample has (outputs, feeds, host function outputs): a dense batch
 * then has at most 32, numpy 1.x's limit. More is refused with GODALI_ERROR_INVALID_PIPELINE
 * at build, or GODALI_ERROR_DATA / GODALI_ERROR_INVALID_ARGUMENT for a sample. */
#define GODALI_MAX_SAMPLE_NDIM 31

/* godali_output_info_t: facts about output `index` of the current batch.
 * ABI: fields are only ever appended; `layout` was appended after num_samples (version
 * 0.1 had no layout), so a program must be compiled against this header to call
 * godali_pipeline_output_info of this library. */
typedef struct {
  int32_t uniform;     /* 1 when every sample has the same shape: a dense [N, ...] tensor */
  int32_t ndim;        /* dimensions of one sample: at most GODALI_MAX_SAMPLE_NDIM */
  int32_t device_type; /* DLDeviceType: kDLCPU or kDLCUDA */
  int32_t device_id;
  DLDataType dtype;
  int64_t num_samples;
  /* The layout of one sample as DALI names it ("HWC", "CHW", "FHWC", ...), one letter
   * per dimension, NUL-terminated; "" when the output has none (labels, shapes, bytes).
   * It is the operator's build-time layout (the engine's only copy of the fact). The
   * pipeline refuses at build an output layout of GODALI_MAX_LAYOUT characters or more. */
  char layout[GODALI_MAX_LAYOUT];
} godali_output_info_t;

/* godali_reader_meta_t: DALI's reader metadata. */
typedef struct {
  int64_t epoch_size;        /* samples in the whole data set (all shards) */
  int64_t epoch_size_padded; /* with pad_last_batch: ceil(n / num_shards) * num_shards */
  int64_t shard_size;        /* samples this shard reads per epoch (padded if pad_last_batch) */
  int32_t shard_id;
  int32_t number_of_shards;
  int32_t pad_last_batch;
  int32_t stick_to_shard;
} godali_reader_meta_t;

/* godali_pool_stats_t: buffer pool counters, for tests and monitoring. */
typedef struct {
  int64_t allocations;     /* buffers obtained from the system (mmap / cuMemAlloc) */
  int64_t releases;        /* buffers given back to the system */
  int64_t acquires;        /* buffers handed out by the pool */
  int64_t returns;         /* buffers returned to the pool */
  int64_t outstanding;     /* acquires - returns: buffers in use (including tensors held
                              by consumers) */
  int64_t reserved_bytes;  /* bytes currently obtained from the system */
  int64_t in_use_bytes;    /* bytes in outstanding buffers */
  int64_t exported;        /* DLPack tensors handed out whose deleter has not run yet */
} godali_pool_stats_t;

/* godali_deleter_t releases memory fed with godali_pipeline_feed_input*: the library
 * calls it exactly once with the ctx given, from any thread (a worker's, or the thread of
 * a later godali call), when it no longer reads the memory. */
typedef void (*godali_deleter_t)(void *ctx);

/* Flags of godali_pipeline_feed_input*. GODALI_FEED_COPY: copy the samples into the
 * library's memory during the call (the deleter runs before the call returns); without
 * it the library reads the caller's memory in place, without a copy. */
#define GODALI_FEED_COPY 1u

/* Host functions (the "python_function" operator; docs/pipeline.md, "Python functions").
 * godali_host_call_t describes one call: the whole batch of every input. */
typedef struct {
  uint64_t call;          /* identifies the call to godali_host_call_output/_fail */
  const char *node;       /* the node's name; valid during the call */
  int64_t num_samples;    /* samples in the batch */
  int32_t num_inputs;
  int32_t num_outputs;    /* outputs the node declares (0: a sink) */
  /* num_inputs * num_samples host tensors, input k's sample i at [k * num_samples + i],
   * compact row-major (strides filled in); read-only, valid during the call only. */
  const DLTensor *inputs;
  int64_t epoch;
  int64_t iteration;
  godali_pipeline_t pipeline; /* the pipeline running the call (0 once destroyed) */
} godali_host_call_t;

/* godali_host_function_t is called once per batch, on a library thread (not the thread
 * that registered it). A node's function runs one call at a time, batch after batch in
 * iteration order (the node's next batch waits for its turn; the pipeline's other work
 * goes on), so it may keep state between calls. Before returning 0 it gives every
 * sample of every output with godali_host_call_output, which copies it: the function
 * may hand the same buffer back every call. A non-zero return fails the batch
 * (GODALI_ERROR_DATA from godali_pipeline_next), with the message given to
 * godali_host_call_fail when it was called. The function must not call into godali for
 * the pipeline that runs it, other than godali_host_call_* and
 * godali_pipeline_interrupt: such a call made on the function's thread (next, wait,
 * reset, destroy, feed, ...) returns GODALI_ERROR_STATE at once ("called from inside the
 * host function ..."), since it would wait for the function. godali_pipeline_destroy
 * waits at most 2 s for a host function that does not return, then says so on stderr and
 * returns without it: the batches it holds are dropped, and the pipeline's memory is
 * freed when the function returns. */
typedef int32_t (*godali_host_function_t)(void *ctx, const godali_host_call_t *call);

#ifndef GODALI_INTERNAL_NO_PROTOTYPES /* defined only inside the library's own build */

/* godali_last_error returns the message of the calling thread's last failed call, or ""
 * when it succeeded or returned GODALI_END_OF_EPOCH. Lifetime: valid until the same
 * thread's next godali call. */
const char *godali_last_error(void);

/* godali_version writes the library version. Any pointer may be NULL. Never fails. */
godali_status_t godali_version(int *major, int *minor, int *patch);

/* godali_flavour writes "cpu" or "cuda". Lifetime: static. Fails only on NULL. */
godali_status_t godali_flavour(const char **out);

/* godali_operator_schemas writes a JSON document describing every registered operator
 * (name, doc, devices, inputs, outputs, arguments with types and defaults), the
 * pipeline-level keys and "aliases" (DALI's former names, e.g. "file_reader":
 * "readers.file", which a pipeline description may use for the operator they name). Lifetime: static (valid until the library is unloaded). Fails only
 * on NULL. */
godali_status_t godali_operator_schemas(const char **out_json);

/* godali_pipeline_create parses and validates a JSON pipeline description of len bytes
 * (len 0: NUL-terminated; otherwise exactly len bytes are read, and a len above 1 GiB is
 * GODALI_ERROR_INVALID_ARGUMENT). Unknown operators or arguments, wrong types, dangling
 * inputs and cycles fail with GODALI_ERROR_INVALID_PIPELINE and a message naming the
 * node, as does text after the JSON object (other than white space). After a failure:
 * no pipeline exists, *out is unwritten; retrying the same text fails the same way.
 * Nothing is opened or started yet: missing files show at build. */
godali_status_t godali_pipeline_create(const char *json, size_t len, godali_pipeline_t *out);

/* godali_pipeline_build opens the data sources, sizes the buffer pools and starts the
 * worker threads. Idempotent: building a built pipeline succeeds and does nothing.
 * A file_root or file_list that does not exist fails with GODALI_ERROR_INVALID_ARGUMENT
 * naming the argument and path; other unreadable data (no files) with GODALI_ERROR_DATA;
 * memory the system refuses with GODALI_ERROR_OUT_OF_MEMORY; NO_CUDA / CUDA: no device.
 * After a failure the pipeline stays created and not built (no thread, no mapped buffer
 * is left), and build may be retried, e.g. after the files appeared; next/run/reset
 * return GODALI_ERROR_STATE meanwhile, restore is still allowed. */
godali_status_t godali_pipeline_build(godali_pipeline_t p);

/* godali_pipeline_run schedules work: after it, up to prefetch_queue_depth batches are
 * being prepared ahead of the consumer. Does not block; does nothing if work is already
 * scheduled or the epoch has ended. Fails only with GODALI_ERROR_STATE before build (and
 * on a bad handle); nothing changes then. */
godali_status_t godali_pipeline_run(godali_pipeline_t p);

/* godali_pipeline_next blocks until the next scheduled batch is complete and makes it the
 * pipeline's current batch (run is implied if nothing is scheduled). Returns
 * GODALI_END_OF_EPOCH after the epoch's last batch (the epoch of the epoch reader: the
 * description's first reader, or the one godali_pipeline_set_epoch_reader names; other
 * readers go on across epochs by themselves), and keeps returning it until
 * godali_pipeline_reset (there is no current batch then). GODALI_ERROR_DATA: a sample of
 * the batch failed (the message names the file); that batch is dropped (no current
 * batch) and counts as taken, so the next call continues with the following batch.
 * GODALI_ERROR_STATE: not built; nothing changes. Whatever it returns, the batch that was
 * current before the call is no longer current (tensors already handed out stay valid). */
godali_status_t godali_pipeline_next(godali_pipeline_t p);

/* godali_pipeline_wait waits at most timeout_ms (0 to 60000) until godali_pipeline_next
 * would return without blocking (its batch is complete, the epoch is over, or it fails)
 * and sets *ready to 1 if so, 0 if the time ran out. It takes no batch and changes no
 * current batch; like next it schedules work if none is. A host that must stay
 * responsive while a batch is late (an interpreter handling Ctrl-C between calls)
 * calls it in a loop before godali_pipeline_next. */
godali_status_t godali_pipeline_wait(godali_pipeline_t p, int64_t timeout_ms, int *ready);

/* godali_pipeline_interrupt makes the pipeline's blocking I/O (remote requests of its
 * readers) return now, so that a build or next blocked on a stalled source returns
 * with an error; meant for shutting down (Ctrl-C), before godali_pipeline_destroy.
 * Unlike the other calls it does not wait for the calls in flight on the pipeline, and
 * may be called from any thread, more than once. */
godali_status_t godali_pipeline_interrupt(godali_pipeline_t p);

/* godali_pipeline_reset starts the next epoch (readers move on to their next shard
 * unless stick_to_shard), at any point of the current one: batches prepared ahead are
 * dropped. Batches already handed out stay valid. A reset before any batch of the
 * current epoch was taken (a second reset in a row, or one right after build) does
 * nothing: it never skips an epoch. Fails only with GODALI_ERROR_STATE before build
 * (nothing changes). */
godali_status_t godali_pipeline_reset(godali_pipeline_t p);

/* godali_pipeline_tuning writes the pipeline's num_threads and prefetch_queue_depth
 * and why, as a JSON object of *len bytes (len may be NULL), NUL-terminated: keys
 * "num_threads", "prefetch_queue_depth", "auto_threads", "auto_prefetch", "cpu" (the
 * process's affinity CPUs, cgroup CPU quota and usable CPUs), "reserved_cpus",
 * "max_threads", "max_prefetch_queue_depth", "state" ("fixed", "initial", "adjusted" or
 * "kept"), "reason", once measured, "measured", and when the workers are pinned
 * "worker_cpus" and "affinity" (the affinity mask, or the CPUs NVML reports near the
 * GPU) (docs/pipeline.md, "Automatic tuning"). With "auto" the values are chosen at creation from the CPU budget and
 * adjusted once from the stage times of the first batches. May be called at any time
 * after create. Ownership: the caller owns *out and frees it with godali_free. */
godali_status_t godali_pipeline_tuning(godali_pipeline_t p, char **out, size_t *len);

/* godali_pipeline_memory_plan writes the pipeline's host memory plan as a JSON object of
 * *len bytes (len may be NULL), NUL-terminated: "outputs" and "intermediates" (per value:
 * "sample_bytes_worst", "sample_bytes_expected", "bytes_worst", "source"), "slot_bytes"
 * (one prefetch slot), "output_bytes", "intermediate_bytes", "decoder_work_bytes",
 * "crossing" and "crossing_bytes" (data of host-batch nodes such as python_function,
 * per batch being prepared or, with the description's "sub_batch_size", per part),
 * "sub_batch_size", "runtime_bytes" (the library's measured run-time memory),
 * "host_bytes_worst", "host_bytes_expected", "max_host_bytes", "available" (cgroup
 * limit, MemAvailable), "scans" (the decoders' image header scans: largest width,
 * height and output) and "warning" when the worst case exceeds the available memory
 * (docs/pipeline.md, "Memory plan"). Worst and expected sizes of images come from the
 * header scan that build starts; before build the plan counts only static shapes. Waits
 * for the scan to end. Ownership: the caller owns *out and frees it with godali_free. */
godali_status_t godali_pipeline_memory_plan(godali_pipeline_t p, char **out, size_t *len);

/* godali_pipeline_checkpoint writes the pipeline's state after the batches the consumer
 * has taken with godali_pipeline_next (not the batches prepared ahead of it): a JSON
 * document of *len bytes (len may be NULL), NUL-terminated. A pipeline restored from it
 * gives, from its first godali_pipeline_next on, exactly the batches this one gives from
 * its next call on. Needs "enable_checkpointing": true in the description
 * (GODALI_ERROR_STATE otherwise); may be called before build, between any two calls.
 * Ownership: the caller owns *out and frees it with godali_free. After a failure
 * (GODALI_ERROR_DATA: the reader's files could not be listed) nothing changes and *out
 * is unwritten; it may be retried. */
godali_status_t godali_pipeline_checkpoint(godali_pipeline_t p, char **out, size_t *len);

/* godali_pipeline_restore sets a created, not yet built pipeline to the state of a
 * checkpoint of len bytes (len 0: NUL-terminated; above 1 GiB:
 * GODALI_ERROR_INVALID_ARGUMENT), then godali_pipeline_build as usual.
 * The checkpoint must come from a pipeline with the same description, up to
 * num_threads, prefetch_queue_depth, device_id, first_epoch, max_image_pixels and the
 * reader's file_root, and the reader must list the same files: otherwise, and for text
 * that is not a godali checkpoint, it fails with GODALI_ERROR_INVALID_ARGUMENT and a
 * message naming what differs, and the pipeline is left as it was. GODALI_ERROR_STATE
 * after build or without "enable_checkpointing": true. After any failure the pipeline is
 * as it was and restore may be retried with another checkpoint. docs/pipeline.md
 * describes the document. */
godali_status_t godali_pipeline_restore(godali_pipeline_t p, const char *checkpoint, size_t len);

/* godali_free frees memory the library allocated for the caller (godali_pipeline_checkpoint).
 * NULL is accepted. Never fails. */
godali_status_t godali_free(void *ptr);

/* Feeding external sources (an "external_source" node; docs/pipeline.md, "External
 * sources"). Each batch the pipeline plans takes the next batch queued for every external
 * source node, so feed at least one batch before godali_pipeline_next, and more to let
 * the pipeline prepare batches ahead (up to prefetch_queue_depth). A next call that finds
 * nothing fed and nothing prepared fails at once with GODALI_ERROR_STATE (it never waits
 * for a feed). A pipeline without readers has no end of epoch unless
 * godali_pipeline_feed_end_of_epoch queues one.
 *
 * godali_pipeline_feed_input queues one dense batch for the node `name`: shape has ndim+1
 * entries, shape[0] samples (the pipeline's batch_size) of shape shape[1..ndim], packed
 * one after the other at data (C order). godali_pipeline_feed_input_ragged takes
 * num_samples samples, sample i at data[i] with shape shapes[i*ndim .. i*ndim+ndim-1].
 * dtype, ndim and layout (NULL or "": not checked) must match the node's declared
 * "dtype", "ndim" and "layout" (and its "shape" when given); every sample's memory is
 * read as host memory. A stream source ("experimental.inputs.video") takes one item per
 * feed instead: one 1-D uint8 sample (an encoded video), which it cuts into batches (the
 * last of them may have fewer than batch_size samples: godali_pipeline_batch_info); the
 * memory is released after the last batch planned from it.
 *
 * Lifetime: unless flags has GODALI_FEED_COPY, the memory (and each data[i]) must stay
 * valid and unchanged until the deleter runs; shape, shapes, the data[] array itself,
 * name and layout are read during the call only. deleter(ctx), when deleter is not NULL,
 * is called exactly once, from any thread: when the batch that used the memory is
 * released (the next godali_pipeline_next, a reset that drops it, or destroy); before
 * the call returns with GODALI_FEED_COPY, or when the call fails (any status, an invalid
 * handle included); or on godali_pipeline_destroy for batches still queued. The
 * deleter must not call into godali for the same pipeline.
 * Errors: GODALI_ERROR_INVALID_ARGUMENT (unknown name, a dtype/ndim/layout/shape that
 * differs from the node's, a sample count other than batch_size, a NULL pointer),
 * GODALI_ERROR_INVALID_HANDLE. Nothing is queued after a failure. Safe from any thread;
 * the calls on a pipeline take turns. */
godali_status_t godali_pipeline_feed_input(godali_pipeline_t p, const char *name, const void *data,
                                           DLDataType dtype, int ndim, const int64_t *shape,
                                           const char *layout, uint32_t flags,
                                           godali_deleter_t deleter, void *ctx);
godali_status_t godali_pipeline_feed_input_ragged(godali_pipeline_t p, const char *name,
                                                  int64_t num_samples, const void *const *data,
                                                  DLDataType dtype, int ndim, const int64_t *shapes,
                                                  const char *layout, uint32_t flags,
                                                  godali_deleter_t deleter, void *ctx);

/* godali_pipeline_feed_end_of_epoch queues an end-of-epoch marker for `name`: the
 * godali_pipeline_next that reaches it returns GODALI_END_OF_EPOCH; after
 * godali_pipeline_reset, batches fed after the marker make the next epoch. */
godali_status_t godali_pipeline_feed_end_of_epoch(godali_pipeline_t p, const char *name);

/* godali_pipeline_feed_drop releases the batches (and markers) queued for `name` and
 * not yet taken by the pipeline, and writes how many to *dropped (may be NULL). */
godali_status_t godali_pipeline_feed_drop(godali_pipeline_t p, const char *name, int64_t *dropped);

/* godali_pipeline_feed_queued writes how many batches (and markers) are queued for `name`
 * and not yet taken by the pipeline. */
godali_status_t godali_pipeline_feed_queued(godali_pipeline_t p, const char *name, int64_t *out);

/* godali_host_function_register makes fn callable by "python_function" nodes and writes
 * the id their "function_id" argument names (never 0, never reused). fn and ctx must stay
 * valid until godali_host_function_unregister returns and every pipeline using the id is
 * destroyed. GODALI_ERROR_INVALID_ARGUMENT for NULL fn or out. */
godali_status_t godali_host_function_register(godali_host_function_t fn, void *ctx, uint64_t *out);

/* godali_host_function_unregister forgets the id: pipelines created later refuse it, and
 * batches that would call it fail with GODALI_ERROR_DATA. Calls in progress finish.
 * GODALI_ERROR_INVALID_ARGUMENT for an unknown id. */
godali_status_t godali_host_function_unregister(uint64_t id);

/* godali_host_shutdown tells the library that the host program is exiting (Python calls it
 * at interpreter exit, so that no library thread calls into a finalized interpreter):
 * from then on it calls no host function (a batch that reaches one fails) and no
 * godali_deleter_t (the exiting host's memory is not given back). Cannot be undone. */
godali_status_t godali_host_shutdown(void);

/* godali_host_call_output copies sample `sample` of output `output` of a call in progress
 * (from inside the host function only) into the pipeline's memory. t must be host
 * memory (kDLCPU), one lane, of a type godali has, compact row-major or with strides (in
 * elements, non-negative); it is read during the call only. Every sample of one output must
 * have the same type and number of dimensions. Giving a sample twice replaces it.
 * GODALI_ERROR_INVALID_ARGUMENT names what is wrong; GODALI_ERROR_STATE for a call that is
 * not in progress. */
godali_status_t godali_host_call_output(uint64_t call, int32_t output, int64_t sample,
                                        const DLTensor *t);

/* godali_host_call_fail sets the message the call's batch fails with (msg of len bytes,
 * len 0: NUL-terminated), from inside the host function, which then returns non-zero. */
godali_status_t godali_host_call_fail(uint64_t call, const char *msg, size_t len);

/* godali_pipeline_destroy stops the workers and releases the pipeline, after the calls
 * other threads have in flight on it returned. Tensors handed out earlier stay valid
 * until their deleters run. A host function that has not returned within 2 s is not
 * waited for (a line on stderr names it; see godali_host_function_t). A second destroy returns GODALI_ERROR_INVALID_HANDLE, its
 * only failure (nothing to retry). */
godali_status_t godali_pipeline_destroy(godali_pipeline_t p);

/* The calls below only read: after a failure (a NULL pointer, an index out of range,
 * GODALI_ERROR_STATE when there is no current batch) nothing changed and the pipeline
 * is as usable as before. */

/* godali_pipeline_num_outputs writes the number of pipeline outputs. */
godali_status_t godali_pipeline_num_outputs(godali_pipeline_t p, int *out);

/* godali_pipeline_output_name writes the name of output `index`.
 * Lifetime: until the pipeline is destroyed. */
godali_status_t godali_pipeline_output_name(godali_pipeline_t p, int index, const char **out);

/* godali_pipeline_batch_info describes the current batch (GODALI_ERROR_STATE: none). */
godali_status_t godali_pipeline_batch_info(godali_pipeline_t p, godali_batch_info_t *out);

/* godali_pipeline_output_info describes output `index` of the current batch. */
godali_status_t godali_pipeline_output_info(godali_pipeline_t p, int index, godali_output_info_t *out);

/* godali_pipeline_skipped writes which samples of the current batch were replaced
 * because they failed (on_error = "skip"; godali_batch_info_t.skipped counts them): a
 * JSON array of *len bytes (len may be NULL), NUL-terminated, "[]" when none, of objects
 * {"sample": index in the batch, "file": the file that failed, "node": the node that
 * failed, "error": the message}, in sample order. GODALI_ERROR_STATE without a current
 * batch. Ownership: the caller owns *out_json and frees it with godali_free. */
godali_status_t godali_pipeline_skipped(godali_pipeline_t p, char **out_json, size_t *len);

/* godali_pipeline_set_profiling turns per-operator timing on (on != 0) or off; before
 * godali_pipeline_build only (GODALI_ERROR_STATE after it, unless nothing changes).
 * GODALI_PROFILE=1 in the environment when the pipeline is created turns it on too.
 * Off, the library keeps no times and the workers pay nothing for it. */
godali_status_t godali_pipeline_set_profiling(godali_pipeline_t p, int on);

/* godali_pipeline_profile writes the time each node of the pipeline has taken so far, as
 * JSON text of *len bytes (len may be NULL), NUL-terminated:
 * {"enabled": bool, "num_threads": N, "wall_s": seconds since build, "nodes": [{"name",
 * "op", "device", "calls": samples processed, "total_s": the Setup+Run time of those
 * samples summed over the threads (output memory included), "mean_us": per sample,
 * "share": of all nodes' total, "fused": [names of nodes fused into this one] (absent when
 * none)}, ...]}, the most expensive node first; GPU nodes count the host time that queues
 * their work, not the GPU's. "nodes" is [] while profiling is off. Any time after create.
 * Ownership: the caller owns *out_json and frees it with godali_free. */
godali_status_t godali_pipeline_profile(godali_pipeline_t p, char **out_json, size_t *len);

/* godali_pipeline_output writes output `index` of the current batch as one dense tensor
 * of shape [N, ...]. Uniform outputs are handed out without a copy; a ragged output whose
 * samples happen to share a shape is gathered into one buffer; a ragged output with
 * different shapes fails with GODALI_ERROR_STATE (use godali_pipeline_output_sample).
 * The tensor is compact row-major with its strides filled in (in elements, as DLPack
 * >= 1.2 requires for ndim > 0; a dimension of size 0 strides as if it were 1); its
 * shape and strides arrays belong to it and are freed by its deleter.
 * Ownership: the caller owns the tensor and must call out->deleter(out) exactly once.
 * The memory stays valid until then, also after the pipeline is destroyed; the deleter
 * may run on any thread.
 * GPU outputs (godali_output_info_t.device_type == kDLCUDA, CUDA flavour): this call
 * waits on the host until the batch's GPU work is done, and the deleter frees the memory
 * after the work then queued on the legacy default stream. To avoid the host wait, use
 * godali_pipeline_output_cuda with the stream that will read the tensor. */
godali_status_t godali_pipeline_output(godali_pipeline_t p, int index, DLManagedTensor **out);

/* godali_pipeline_output_cuda: as godali_pipeline_output, ordered with a CUDA stream
 * instead of the host, following DLPack's rules for the `stream` argument of
 * __dlpack__: 1 is the legacy default stream, 2 the per-thread default stream, a value
 * above 2 a CUstream (cudaStream_t) handle of the pipeline's device, -1 asks for no
 * synchronisation (the consumer orders itself, e.g. after a device-wide sync); 0 is
 * rejected. For a GPU output, `stream` is made to wait (cuStreamWaitEvent) for the work
 * that produced the batch; the host does not wait. The deleter releases the memory only
 * after the work queued on that stream when it runs (the legacy default stream for -1
 * and 2, whose per-thread stream cannot be named from another thread), so the consumer
 * may call it as soon as it has queued its last use. For host outputs `stream` is
 * checked and otherwise ignored. After a failure nothing was handed out and nothing
 * changed: the call may be retried (GODALI_ERROR_CUDA excepted, see above). */
godali_status_t godali_pipeline_output_cuda(godali_pipeline_t p, int index, int64_t stream,
                                            DLManagedTensor **out);

/* godali_pipeline_output_versioned: as godali_pipeline_output (a host wait for GPU
 * outputs), DLPack >= 1.0 struct. */
godali_status_t godali_pipeline_output_versioned(godali_pipeline_t p, int index,
                                                 DLManagedTensorVersioned **out);

/* godali_pipeline_output_sample writes sample `sample` of output `index` (shape without
 * the batch dimension), without a copy. Ownership as for godali_pipeline_output. */
godali_status_t godali_pipeline_output_sample(godali_pipeline_t p, int index, int64_t sample,
                                              DLManagedTensor **out);

/* godali_pipeline_output_sample_cuda: godali_pipeline_output_sample with the stream
 * rules of godali_pipeline_output_cuda. */
godali_status_t godali_pipeline_output_sample_cuda(godali_pipeline_t p, int index,
                                                   int64_t sample, int64_t stream,
                                                   DLManagedTensor **out);

/* godali_tensor_stream_wait makes `stream` (DLPack rules, as for
 * godali_pipeline_output_cuda) wait for the GPU work that produced a tensor from
 * godali_pipeline_output* whose deleter has not run, and makes the deleter release the
 * memory after that stream's work. It serves consumers that meet the tensor after the
 * pipeline has moved on (a later __dlpack__ call): the fence then may also cover later
 * batches of the pipeline, which is waiting longer, never too little. Host tensors
 * succeed without doing anything. GODALI_ERROR_INVALID_ARGUMENT (nothing changes) for
 * NULL or a tensor this library did not make; a tensor whose deleter ran is freed memory
 * and must not be passed. */
godali_status_t godali_tensor_stream_wait(const DLManagedTensor *t, int64_t stream);

/* godali_pipeline_reader_meta describes the reader named `name` (the node's "name"). */
godali_status_t godali_pipeline_reader_meta(godali_pipeline_t p, const char *name,
                                            godali_reader_meta_t *out);

/* godali_pipeline_set_epoch_reader makes the reader named `name` define the pipeline's
 * epochs: GODALI_END_OF_EPOCH follows its epoch's last batch, and batch_info's epoch,
 * iteration, valid and last_in_epoch are its own. A pipeline may have several readers
 * (each plans its own samples of every batch, with its own shards and shuffling); by
 * default the first reader of the description defines the epochs, and the others go on
 * across them by themselves, each starting its next epoch when its own ends. Allowed at
 * any time: the consumer's place in every reader's stream is kept (batches prepared
 * ahead are dropped and prepared again), and checkpoints record the choice.
 * GODALI_ERROR_INVALID_ARGUMENT (nothing changes) when no reader has that name. */
godali_status_t godali_pipeline_set_epoch_reader(godali_pipeline_t p, const char *name);

/* godali_check_node checks one node of a pipeline description (an object of "ops":
 * "op", "args", "arg_inputs"; "name" optional) against its operator's schema, aliases
 * resolved, as godali_pipeline_create does, without making anything: the one argument
 * checker, for bindings that check each operator call as it is written (DALI's Python
 * does). GODALI_ERROR_INVALID_PIPELINE with the message in godali_last_error (DALI's
 * words: an argument "not defined for operator", with the nearest declared name; "Not
 * all required arguments were specified"); GODALI_ERROR_INVALID_ARGUMENT for text that
 * is not such an object. `len` as godali_pipeline_create's. */
godali_status_t godali_check_node(const char *json, size_t len);

/* godali_pipeline_set_last_batch_policy sets the pipeline's last_batch_policy, "fill",
 * "partial" or "drop" (the description's key of that name, DALI's LastBatchPolicy), at
 * the start of an epoch (before its first batch is taken; batches prepared ahead are
 * dropped and prepared again). Over a reader without pad_last_batch, the policy also
 * decides where each epoch starts in the reader's stream and how many batches it has,
 * as DALI's iterators count them; checkpoints record it.
 * GODALI_ERROR_INVALID_ARGUMENT for another name, or "drop" with no full batch in the
 * smallest shard; GODALI_ERROR_STATE (nothing changes) once a batch of the epoch is
 * taken. */
godali_status_t godali_pipeline_set_last_batch_policy(godali_pipeline_t p, const char *policy);

/* godali_pipeline_epoch_batches writes how many batches the current epoch delivers
 * (the epoch of the next batch, or of the last one once the epoch is over) under the
 * pipeline's last_batch_policy, as the epoch reader counts them: the steps of a training
 * epoch, the same on every shard; -1 without a reader. */
godali_status_t godali_pipeline_epoch_batches(godali_pipeline_t p, int64_t *out);

/* godali_pipeline_epoch_size writes the reader's epoch_size (DALI's pipe.epoch_size). */
godali_status_t godali_pipeline_epoch_size(godali_pipeline_t p, const char *name, int64_t *out);

/* godali_pipeline_pool_stats: the pipeline's host pool (device_type kDLCPU), device pool
 * (kDLCUDA) or pinned host pool (kDLCUDAHost). After warm-up a pipeline's device pool
 * makes no more allocations (cuMemAlloc): `allocations` stays constant. */
godali_status_t godali_pipeline_pool_stats(godali_pipeline_t p, int32_t device_type,
                                           godali_pool_stats_t *out);

/* godali_memory_stats: all pools of the process, including those of destroyed pipelines
 * whose tensors are still held. */
godali_status_t godali_memory_stats(int32_t device_type, godali_pool_stats_t *out);

/* godali_live_pipelines writes how many pipeline handles are alive (leak checks). */
godali_status_t godali_live_pipelines(int64_t *out);

#endif /* GODALI_INTERNAL_NO_PROTOTYPES */

#ifdef __cplusplus
}
#endif

#endif /* GODALI_H_ */
