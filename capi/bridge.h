/* bridge.h: C helpers of the capi package (not part of the public ABI). */
#ifndef GODALI_BRIDGE_H_
#define GODALI_BRIDGE_H_

#define GODALI_INTERNAL_NO_PROTOTYPES
#include "godali.h"

void godali_set_error(const char *msg, size_t len);
void godali_clear_error(void);
DLManagedTensor *godali_new_tensor(uintptr_t data, int ndim, const int64_t *shape, uint8_t code,
                                   uint8_t bits, int32_t device_type, int32_t device_id,
                                   uint64_t ctx);
uint64_t godali_tensor_context(const DLManagedTensor *t);
DLManagedTensorVersioned *godali_new_tensor_versioned(uintptr_t data, int ndim, const int64_t *shape,
                                                      uint8_t code, uint8_t bits,
                                                      int32_t device_type, int32_t device_id,
                                                      uint64_t ctx);

void godali_call_deleter(godali_deleter_t d, uintptr_t ctx);
int32_t godali_call_host_function(godali_host_function_t fn, uintptr_t ctx, const godali_host_call_t *call);

#endif
