// bridge.c: the C side of the ABI: per-thread error messages and DLPack deleters.
#include <stdlib.h>
#include <string.h>

#include "bridge.h"

// Implemented in Go (exports.go): drops the reference an exported tensor holds.
extern void godaliReleaseExport(uint64_t ctx);

#include <pthread.h>

// The message buffer is allocated per thread on first use and freed when the thread
// exits. A large __thread array would sit in the static TLS block, which a library
// loaded with dlopen (Python's ctypes) may not get.
enum { error_cap = 4096 };
static pthread_key_t error_key;
static pthread_once_t error_once = PTHREAD_ONCE_INIT;
static const char empty[1] = "";

static void make_error_key(void) { pthread_key_create(&error_key, free); }

static char *error_buffer(int create) {
  pthread_once(&error_once, make_error_key);
  char *b = pthread_getspecific(error_key);
  if (b == NULL && create) {
    b = malloc(error_cap);
    if (b != NULL) {
      b[0] = 0;
      pthread_setspecific(error_key, b);
    }
  }
  return b;
}

const char *godali_last_error(void) {
  char *b = error_buffer(0);
  return b ? b : empty;
}

void godali_set_error(const char *msg, size_t len) {
  char *b = error_buffer(1);
  if (b == NULL) return;
  if (len >= error_cap) len = error_cap - 1;
  memcpy(b, msg, len);
  b[len] = 0;
}

void godali_clear_error(void) {
  char *b = error_buffer(0);
  if (b != NULL) b[0] = 0;
}

// One allocation holds the managed tensor, its shape and its strides (dims[0, ndim) and
// dims[ndim, 2*ndim)); the context is the Go-side export id.
typedef struct {
  DLManagedTensor managed;
  uint64_t ctx;
  int64_t dims[];
} tensor_block;

// dims_bytes is the size of the shape and strides arrays (one element for a scalar, so
// that the flexible array is never empty).
static size_t dims_bytes(int ndim) { return sizeof(int64_t) * (ndim > 0 ? 2 * (size_t)ndim : 1); }

static void tensor_deleter(DLManagedTensor *self) {
  if (self == NULL) return;
  tensor_block *b = (tensor_block *)self;
  godaliReleaseExport(b->ctx);
  free(b);
}

// fill_tensor describes compact row-major memory (a host address, or a CUdeviceptr for
// kDLCUDA) whose shape and strides live in the same allocation as the tensor (dims, of
// dims_bytes(ndim)). DLPack >= 1.2 requires strides for ndim > 0; they count elements,
// and a dimension of size 0 strides as if it were 1, as PyTorch and NumPy lay out
// contiguous tensors.
static void fill_tensor(DLTensor *t, uintptr_t data, int ndim, int64_t *dims,
                        const int64_t *shape, uint8_t code, uint8_t bits, int32_t device_type,
                        int32_t device_id) {
  int64_t *shape_store = dims, *strides = NULL; /* a scalar may have NULL strides */
  if (ndim > 0) {
    strides = dims + ndim;
    memcpy(shape_store, shape, sizeof(int64_t) * ndim);
    int64_t step = 1;
    for (int i = ndim - 1; i >= 0; i--) {
      strides[i] = step;
      step *= shape[i] > 1 ? shape[i] : 1;
    }
  }
  t->data = (void *)data;
  t->device.device_type = (DLDeviceType)device_type;
  t->device.device_id = device_id;
  t->ndim = ndim;
  t->dtype.code = code;
  t->dtype.bits = bits;
  t->dtype.lanes = 1;
  t->shape = shape_store;
  t->strides = strides;
  t->byte_offset = 0;
}

DLManagedTensor *godali_new_tensor(uintptr_t data, int ndim, const int64_t *shape, uint8_t code,
                                   uint8_t bits, int32_t device_type, int32_t device_id,
                                   uint64_t ctx) {
  if (ndim < 0) return NULL;
  tensor_block *b = malloc(sizeof(tensor_block) + dims_bytes(ndim));
  if (b == NULL) return NULL;
  memset(b, 0, sizeof(*b));
  fill_tensor(&b->managed.dl_tensor, data, ndim, b->dims, shape, code, bits, device_type, device_id);
  b->managed.manager_ctx = b;
  b->managed.deleter = tensor_deleter;
  b->ctx = ctx;
  return &b->managed;
}

typedef struct {
  DLManagedTensorVersioned managed;
  uint64_t ctx;
  int64_t dims[]; /* as tensor_block's */
} tensor_block_v;

static void tensor_deleter_v(DLManagedTensorVersioned *self) {
  if (self == NULL) return;
  tensor_block_v *b = (tensor_block_v *)self;
  godaliReleaseExport(b->ctx);
  free(b);
}

// godali_tensor_context returns the export id of a tensor this library made, 0 for any
// other tensor (the deleter tells them apart).
uint64_t godali_tensor_context(const DLManagedTensor *t) {
  if (t == NULL || t->deleter != tensor_deleter) return 0;
  return ((const tensor_block *)t)->ctx;
}

DLManagedTensorVersioned *godali_new_tensor_versioned(uintptr_t data, int ndim, const int64_t *shape,
                                                      uint8_t code, uint8_t bits,
                                                      int32_t device_type, int32_t device_id,
                                                      uint64_t ctx) {
  if (ndim < 0) return NULL;
  tensor_block_v *b = malloc(sizeof(tensor_block_v) + dims_bytes(ndim));
  if (b == NULL) return NULL;
  memset(b, 0, sizeof(*b));
  b->managed.version.major = DLPACK_MAJOR_VERSION;
  b->managed.version.minor = DLPACK_MINOR_VERSION;
  b->managed.flags = 0;
  fill_tensor(&b->managed.dl_tensor, data, ndim, b->dims, shape, code, bits, device_type, device_id);
  b->managed.manager_ctx = b;
  b->managed.deleter = tensor_deleter_v;
  b->ctx = ctx;
  return &b->managed;
}

// Calls a feed's deleter (Go cannot call a C function pointer itself).
void godali_call_deleter(godali_deleter_t d, uintptr_t ctx) {
  if (d != NULL) d((void *)ctx);
}

// Calls a host function (Go cannot call a C function pointer itself).
int32_t godali_call_host_function(godali_host_function_t fn, uintptr_t ctx, const godali_host_call_t *call) {
  if (fn == NULL) return -1;
  return fn((void *)ctx, call);
}
