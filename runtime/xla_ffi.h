/* xla_ffi.h - the part of XLA's FFI C ABI (API major version 0) that
 * xla_ffi.c uses, declared from its published layout under blk's own
 * names.  Each struct starts with its size as the caller filled it in;
 * later minor versions append fields only.  tests/runtime/test_xla_abi.c
 * checks every offset and value here against XLA's own header
 * (xla/ffi/api/c_api.h, shipped in jaxlib) where it is installed. */
#ifndef BLK_RUNTIME_XLA_FFI_H
#define BLK_RUNTIME_XLA_FFI_H

#include <stddef.h>
#include <stdint.h>

/* A struct's size up to and including field f, as the ABI counts it. */
#define XLA_SIZE_UPTO(type, f) (offsetof(type, f) + sizeof(((type *)0)->f))

enum { XLA_EXT_METADATA = 1 };
enum { XLA_STAGE_EXECUTE = 3 };
enum { XLA_ATTR_SCALAR = 3 };
enum { XLA_ERR_INVALID_ARGUMENT = 3, XLA_ERR_UNIMPLEMENTED = 12, XLA_ERR_INTERNAL = 13 };

/* XLA's element types (its PrimitiveType numbers) that blk has. */
enum {
	XLA_PRED = 1,
	XLA_S8 = 2,
	XLA_S32 = 4,
	XLA_S64 = 5,
	XLA_U8 = 6,
	XLA_U32 = 8,
	XLA_U64 = 9,
	XLA_F16 = 10,
	XLA_F32 = 11,
	XLA_BF16 = 16,
	XLA_F8E5M2 = 19,
	XLA_F8E4M3FN = 20,
};

typedef struct XlaExt {
	size_t struct_size;
	int type; /* XLA_EXT_* */
	struct XlaExt *next;
} XlaExt;

typedef struct XlaApiVersion {
	size_t struct_size;
	XlaExt *ext;
	int major, minor;
} XlaApiVersion;

typedef struct XlaErrorCreateArgs {
	size_t struct_size;
	XlaExt *ext;
	const char *message;
	int code; /* XLA_ERR_* */
} XlaErrorCreateArgs;

typedef struct XlaErrorDestroyArgs {
	size_t struct_size;
	XlaExt *ext;
	void *error;
} XlaErrorDestroyArgs;

typedef struct XlaStreamArgs {
	size_t struct_size;
	XlaExt *ext;
	void *ctx;
	void *stream; /* out: the CUstream */
} XlaStreamArgs;

typedef struct XlaDeviceOrdinalArgs {
	size_t struct_size;
	XlaExt *ext;
	void *ctx;
	int32_t ordinal; /* out */
} XlaDeviceOrdinalArgs;

typedef void *XlaFn(void *args); /* every entry of the API table: an error or NULL */

typedef struct XlaApi {
	size_t struct_size;
	XlaExt *ext;
	XlaApiVersion version;
	const void *internal;
	void *(*error_create)(XlaErrorCreateArgs *);
	XlaFn *error_get_message;
	void (*error_destroy)(XlaErrorDestroyArgs *);
	XlaFn *handler_register;
	void *(*stream_get)(XlaStreamArgs *);
	XlaFn *type_register;
	XlaFn *execution_context_get;
	XlaFn *state_set;
	XlaFn *state_get;
	XlaFn *device_memory_allocate;
	XlaFn *device_memory_free;
	XlaFn *thread_pool_schedule;
	XlaFn *thread_pool_num_threads;
	XlaFn *future_create;
	XlaFn *future_set_available;
	XlaFn *future_set_error;
	XlaFn *run_id_get;
	void *(*device_ordinal_get)(XlaDeviceOrdinalArgs *);
} XlaApi;

typedef struct XlaBuffer {
	size_t struct_size;
	XlaExt *ext;
	int dtype; /* XLA_* element type */
	void *data;
	int64_t rank;
	int64_t *dims;
} XlaBuffer;

/* The operands or the results of a call: every one a buffer here. */
typedef struct XlaBuffers {
	size_t struct_size;
	XlaExt *ext;
	int64_t size;
	int *types;
	XlaBuffer **items;
} XlaBuffers;

typedef struct XlaSpan {
	const char *ptr;
	size_t len;
} XlaSpan;

typedef struct XlaScalar {
	int dtype;
	void *value;
} XlaScalar;

/* The call's attributes, sorted by name. */
typedef struct XlaAttrs {
	size_t struct_size;
	XlaExt *ext;
	int64_t size;
	int *types; /* XLA_ATTR_* */
	XlaSpan **names;
	void **attrs;
} XlaAttrs;

typedef struct XlaCallFrame {
	size_t struct_size;
	XlaExt *ext;
	const XlaApi *api;
	void *ctx;
	int stage; /* XLA_STAGE_* */
	XlaBuffers args;
	XlaBuffers rets;
	XlaAttrs attrs;
	void *future;
} XlaCallFrame;

typedef struct XlaMetadata {
	size_t struct_size;
	XlaApiVersion version;
	uint32_t traits;
	int64_t state_type_id;
} XlaMetadata;

typedef struct XlaMetadataExt {
	XlaExt base;
	XlaMetadata *metadata;
} XlaMetadataExt;

#endif
