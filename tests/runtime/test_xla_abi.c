/* test_xla_abi.c - runtime/xla_ffi.h's declarations of XLA's FFI ABI
 * against XLA's own header (xla/ffi/api/c_api.h, in jaxlib's include
 * directory, jax.ffi.include_dir()).  Compiling is the test: every offset,
 * size and value blk relies on is a static assertion.  python/tests/
 * test_jax.py compiles and runs it where jaxlib is installed:
 *   cc -I"$(python -c 'import jax.ffi; print(jax.ffi.include_dir())')" -I. \
 *      tests/runtime/test_xla_abi.c */
#include <stdio.h>

#include "runtime/xla_ffi.h"
#include "xla/ffi/api/c_api.h"

#define SAME_FIELD(ours, f, theirs, g)                                                \
	_Static_assert(offsetof(ours, f) == offsetof(theirs, g) &&                        \
	                   sizeof(((ours *)0)->f) == sizeof(((theirs *)0)->g),            \
	               #ours "." #f " is not " #theirs "." #g)
#define SAME_SIZE(ours, theirs) \
	_Static_assert(sizeof(ours) == sizeof(theirs), #ours " is not the size of " #theirs)

/* API 0.4 (jaxlib 0.11) renamed the struct that chains a call frame's
 * extensions; its layout stayed. */
#if XLA_FFI_API_MINOR >= 4
typedef XLA_FFI_InternalExtension TheirExt;
#else
typedef XLA_FFI_Extension_Base TheirExt;
#endif
SAME_SIZE(XlaExt, TheirExt);
SAME_FIELD(XlaExt, type, TheirExt, type);
SAME_FIELD(XlaExt, next, TheirExt, next);

SAME_SIZE(XlaApiVersion, XLA_FFI_Api_Version);
SAME_FIELD(XlaApiVersion, major, XLA_FFI_Api_Version, major_version);
SAME_FIELD(XlaApiVersion, minor, XLA_FFI_Api_Version, minor_version);

SAME_SIZE(XlaErrorCreateArgs, XLA_FFI_Error_Create_Args);
SAME_FIELD(XlaErrorCreateArgs, message, XLA_FFI_Error_Create_Args, message);
SAME_FIELD(XlaErrorCreateArgs, code, XLA_FFI_Error_Create_Args, errc);
SAME_FIELD(XlaErrorDestroyArgs, error, XLA_FFI_Error_Destroy_Args, error);

SAME_FIELD(XlaStreamArgs, ctx, XLA_FFI_Stream_Get_Args, ctx);
SAME_FIELD(XlaStreamArgs, stream, XLA_FFI_Stream_Get_Args, stream);
SAME_FIELD(XlaDeviceOrdinalArgs, ctx, XLA_FFI_DeviceOrdinal_Get_Args, ctx);
SAME_FIELD(XlaDeviceOrdinalArgs, ordinal, XLA_FFI_DeviceOrdinal_Get_Args, device_ordinal);

SAME_FIELD(XlaApi, version, XLA_FFI_Api, api_version);
SAME_FIELD(XlaApi, error_create, XLA_FFI_Api, XLA_FFI_Error_Create);
SAME_FIELD(XlaApi, error_destroy, XLA_FFI_Api, XLA_FFI_Error_Destroy);
SAME_FIELD(XlaApi, stream_get, XLA_FFI_Api, XLA_FFI_Stream_Get);
SAME_FIELD(XlaApi, device_ordinal_get, XLA_FFI_Api, XLA_FFI_DeviceOrdinal_Get);

SAME_SIZE(XlaBuffer, XLA_FFI_Buffer);
SAME_FIELD(XlaBuffer, dtype, XLA_FFI_Buffer, dtype);
SAME_FIELD(XlaBuffer, data, XLA_FFI_Buffer, data);
SAME_FIELD(XlaBuffer, rank, XLA_FFI_Buffer, rank);
SAME_FIELD(XlaBuffer, dims, XLA_FFI_Buffer, dims);

SAME_SIZE(XlaBuffers, XLA_FFI_Args);
SAME_FIELD(XlaBuffers, size, XLA_FFI_Args, size);
SAME_FIELD(XlaBuffers, types, XLA_FFI_Args, types);
SAME_FIELD(XlaBuffers, items, XLA_FFI_Args, args);
SAME_FIELD(XlaBuffers, size, XLA_FFI_Rets, size);
SAME_FIELD(XlaBuffers, types, XLA_FFI_Rets, types);
SAME_FIELD(XlaBuffers, items, XLA_FFI_Rets, rets);

SAME_SIZE(XlaSpan, XLA_FFI_ByteSpan);
SAME_FIELD(XlaSpan, len, XLA_FFI_ByteSpan, len);
SAME_SIZE(XlaScalar, XLA_FFI_Scalar);
SAME_FIELD(XlaScalar, value, XLA_FFI_Scalar, value);

SAME_SIZE(XlaAttrs, XLA_FFI_Attrs);
SAME_FIELD(XlaAttrs, size, XLA_FFI_Attrs, size);
SAME_FIELD(XlaAttrs, types, XLA_FFI_Attrs, types);
SAME_FIELD(XlaAttrs, names, XLA_FFI_Attrs, names);
SAME_FIELD(XlaAttrs, attrs, XLA_FFI_Attrs, attrs);

SAME_FIELD(XlaCallFrame, api, XLA_FFI_CallFrame, api);
SAME_FIELD(XlaCallFrame, ctx, XLA_FFI_CallFrame, ctx);
SAME_FIELD(XlaCallFrame, stage, XLA_FFI_CallFrame, stage);
SAME_FIELD(XlaCallFrame, args, XLA_FFI_CallFrame, args);
SAME_FIELD(XlaCallFrame, rets, XLA_FFI_CallFrame, rets);
SAME_FIELD(XlaCallFrame, attrs, XLA_FFI_CallFrame, attrs);

SAME_FIELD(XlaMetadata, version, XLA_FFI_Metadata, api_version);
SAME_FIELD(XlaMetadata, traits, XLA_FFI_Metadata, traits);
SAME_FIELD(XlaMetadata, state_type_id, XLA_FFI_Metadata, state_type_id);
SAME_FIELD(XlaMetadataExt, metadata, XLA_FFI_Metadata_Extension, metadata);

#define SAME_VALUE(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #ours " is not " #theirs)

SAME_VALUE(XLA_EXT_METADATA, XLA_FFI_Extension_Metadata);
SAME_VALUE(XLA_STAGE_EXECUTE, XLA_FFI_ExecutionStage_EXECUTE);
SAME_VALUE(XLA_ATTR_SCALAR, XLA_FFI_AttrType_SCALAR);
SAME_VALUE(XLA_ERR_INVALID_ARGUMENT, XLA_FFI_Error_Code_INVALID_ARGUMENT);
SAME_VALUE(XLA_ERR_UNIMPLEMENTED, XLA_FFI_Error_Code_UNIMPLEMENTED);
SAME_VALUE(XLA_ERR_INTERNAL, XLA_FFI_Error_Code_INTERNAL);
SAME_VALUE(XLA_PRED, XLA_FFI_DataType_PRED);
SAME_VALUE(XLA_S8, XLA_FFI_DataType_S8);
SAME_VALUE(XLA_S32, XLA_FFI_DataType_S32);
SAME_VALUE(XLA_S64, XLA_FFI_DataType_S64);
SAME_VALUE(XLA_U8, XLA_FFI_DataType_U8);
SAME_VALUE(XLA_U32, XLA_FFI_DataType_U32);
SAME_VALUE(XLA_U64, XLA_FFI_DataType_U64);
SAME_VALUE(XLA_F16, XLA_FFI_DataType_F16);
SAME_VALUE(XLA_F32, XLA_FFI_DataType_F32);
SAME_VALUE(XLA_BF16, XLA_FFI_DataType_BF16);
SAME_VALUE(XLA_F8E5M2, XLA_FFI_DataType_F8E5M2);
SAME_VALUE(XLA_F8E4M3FN, XLA_FFI_DataType_F8E4M3FN);
_Static_assert(XLA_FFI_API_MAJOR == 0, "blk's handler speaks XLA FFI API 0.x");

int main(void)
{
	printf("xla_ffi.h matches XLA FFI API %d.%d\n", XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR);
	return 0;
}
