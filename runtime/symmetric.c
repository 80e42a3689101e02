/* symmetric.c - buffers every rank of a group maps, for kernels with
 * symmetric params launched from C (Python takes torch's symmetric memory
 * instead, python/blk/_kernel.py).
 *
 * The memory comes from the CUDA driver's virtual memory management, not
 * from blk: cuMemCreate makes a physical allocation with a POSIX file
 * descriptor handle; each process maps its own and imports and maps the
 * others' (cuMemImportFromShareableHandle, cuMemAddressReserve, cuMemMap,
 * cuMemSetAccess for this device), so every rank reaches every buffer over
 * NVLink with plain loads and stores.  The descriptors travel between the
 * processes by the caller's own means: blk has no transport.  The table of
 * every rank's address is uploaded once, when the last one is mapped.
 */
#include "rt.h"

#include <stdlib.h>

struct BlkSymmetric {
	uint32_t tag; /* BLK_TAG_SYMMETRIC (handle.c) */
	BlkRuntime *rt;
	int rank, world;
	size_t bytes;                          /* rounded up to the granularity */
	CUmemGenericAllocationHandle *handle;  /* per rank; 0: not imported yet */
	CUdeviceptr *addr;                     /* per rank: its mapping here */
	CUdeviceptr table;                     /* world u64s on the device, once complete */
};

static bool vmm_ok(BlkRuntime *rt, const char *what)
{
	if (!blk_rt_enter(rt, what))
		return false;
	const BlkDriver *d = rt->drv;
	bool ok = true;
#define X(name, ver) ok = ok && d->name;
	BLK_CU_VMM_FUNCS(X)
#undef X
	return ok ? true : blk_rt_error(rt, "%s: the CUDA driver has no virtual memory management "
	                                "(cuMemCreate and its kin): update the NVIDIA driver", what);
}

static CUmemAccessDesc access_here(const BlkRuntime *rt)
{
	CUmemAccessDesc a = { 0 };
	a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a.location.id = (int)rt->dev;
	a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return a;
}

/* Maps allocation h (rank r's) into this process, readable and writable
 * from this device. */
static bool map_rank(BlkSymmetric *s, int r, CUmemGenericAllocationHandle h)
{
	BlkRuntime *rt = s->rt;
	const BlkDriver *d = rt->drv;
	CUdeviceptr p = 0;
	CUmemAccessDesc a = access_here(rt);
	if (!blk_rt_check(rt, d->cuMemAddressReserve(&p, s->bytes, 0, 0, 0), "cuMemAddressReserve"))
		return false;
	if (!blk_rt_check(rt, d->cuMemMap(p, s->bytes, 0, h, 0), "cuMemMap")) {
		d->cuMemAddressFree(p, s->bytes);
		return false;
	}
	if (!blk_rt_check(rt, d->cuMemSetAccess(p, s->bytes, &a, 1), "cuMemSetAccess")) {
		d->cuMemUnmap(p, s->bytes);
		d->cuMemAddressFree(p, s->bytes);
		return false;
	}
	s->handle[r] = h;
	s->addr[r] = p;
	return true;
}

static void unmap_rank(BlkSymmetric *s, int r)
{
	const BlkDriver *d = s->rt->drv;
	if (s->addr[r]) {
		d->cuMemUnmap(s->addr[r], s->bytes);
		d->cuMemAddressFree(s->addr[r], s->bytes);
	}
	if (s->handle[r])
		d->cuMemRelease(s->handle[r]);
	s->addr[r] = 0;
	s->handle[r] = 0;
}

static void free_shell(BlkSymmetric *s)
{
	free(s->handle);
	free(s->addr);
	blk_handle_retire(s);
}

BlkSymmetric *blk_symmetric_create(BlkRuntime *rt, size_t bytes, int rank, int world)
{
	if (!blk_handle_ok(rt, BLK_TAG_RUNTIME, "blk_symmetric_create") ||
	    !vmm_ok(rt, "blk_symmetric_create"))
		return NULL;
	if (world < 1 || world > BLK_MAX_WORLD) {
		blk_rt_error(rt, "blk_symmetric_create: a world of %d ranks; it has 1 to %d", world,
		             BLK_MAX_WORLD);
		return NULL;
	}
	if (rank < 0 || rank >= world) {
		blk_rt_error(rt, "blk_symmetric_create: rank %d of a world of %d (a rank is 0 .. world - 1)",
		             rank, world);
		return NULL;
	}
	if (bytes == 0) {
		blk_rt_error(rt, "blk_symmetric_create: 0 bytes");
		return NULL;
	}
	CUmemAllocationProp prop = { 0 };
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = (int)rt->dev;
	size_t gran = 0;
	if (!blk_rt_check(rt, rt->drv->cuMemGetAllocationGranularity(&gran, &prop,
	                                                              CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
	                  "cuMemGetAllocationGranularity"))
		return NULL;
	if (gran == 0 || bytes > SIZE_MAX - gran) {
		blk_rt_error(rt, "blk_symmetric_create: %zu bytes is more than can be mapped", bytes);
		return NULL;
	}
	BlkSymmetric *s = calloc(1, sizeof *s);
	if (s) {
		s->handle = calloc((size_t)world, sizeof *s->handle);
		s->addr = calloc((size_t)world, sizeof *s->addr);
	}
	if (!s || !s->handle || !s->addr) {
		if (s)
			free_shell(s);
		blk_rt_error(rt, "out of memory");
		return NULL;
	}
	s->tag = BLK_TAG_SYMMETRIC;
	s->rt = rt, s->rank = rank, s->world = world;
	s->bytes = (bytes + gran - 1) / gran * gran;
	CUmemGenericAllocationHandle h = 0;
	if (!blk_rt_check(rt, rt->drv->cuMemCreate(&h, s->bytes, &prop, 0), "cuMemCreate")) {
		free_shell(s);
		return NULL;
	}
	if (!map_rank(s, rank, h)) {
		rt->drv->cuMemRelease(h);
		free_shell(s);
		return NULL;
	}
	return s;
}

static bool live(const BlkSymmetric *s, const char *what)
{
	return blk_handle_ok(s, BLK_TAG_SYMMETRIC, what) && blk_rt_enter(s->rt, what);
}

int blk_symmetric_export(BlkSymmetric *s)
{
	if (!live(s, "blk_symmetric_export"))
		return -1;
	int fd = -1;
	if (!blk_rt_check(s->rt, s->rt->drv->cuMemExportToShareableHandle(
	                             &fd, s->handle[s->rank], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
	                  "cuMemExportToShareableHandle"))
		return -1;
	return fd;
}

bool blk_symmetric_import(BlkSymmetric *s, int rank, int fd)
{
	if (!live(s, "blk_symmetric_import"))
		return false;
	BlkRuntime *rt = s->rt;
	if (rank < 0 || rank >= s->world || rank == s->rank)
		return blk_rt_error(rt, "blk_symmetric_import: rank %d is not another rank of this world of %d "
		                    "(this one is %d)", rank, s->world, s->rank);
	if (s->handle[rank])
		return blk_rt_error(rt, "blk_symmetric_import: rank %d's buffer is mapped already", rank);
	if (fd < 0)
		return blk_rt_error(rt, "blk_symmetric_import: %d is not a file descriptor", fd);
	CUmemGenericAllocationHandle h = 0;
	if (!blk_rt_check(rt, rt->drv->cuMemImportFromShareableHandle(
	                          &h, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
	                  "cuMemImportFromShareableHandle"))
		return false;
	if (!map_rank(s, rank, h)) {
		rt->drv->cuMemRelease(h);
		return false;
	}
	return true;
}

void *blk_symmetric_data(const BlkSymmetric *s)
{
	if (!blk_handle_ok(s, BLK_TAG_SYMMETRIC, "blk_symmetric_data"))
		return NULL;
	return (void *)(uintptr_t)s->addr[s->rank];
}

const void *blk_symmetric_peers(BlkSymmetric *s)
{
	if (!live(s, "blk_symmetric_peers"))
		return NULL;
	BlkRuntime *rt = s->rt;
	if (s->table)
		return (const void *)(uintptr_t)s->table;
	for (int r = 0; r < s->world; r++)
		if (!s->addr[r]) {
			blk_rt_error(rt, "blk_symmetric_peers: rank %d's buffer is not imported yet", r);
			return NULL;
		}
	uint64_t *host = malloc(sizeof *host * (size_t)s->world);
	CUdeviceptr t = 0;
	bool ok = host != NULL;
	for (int r = 0; ok && r < s->world; r++)
		host[r] = (uint64_t)s->addr[r];
	ok = ok ? blk_rt_check(rt, rt->drv->cuMemAlloc(&t, sizeof *host * (size_t)s->world), "cuMemAlloc")
	        : blk_rt_error(rt, "out of memory");
	if (ok && !blk_rt_check(rt, rt->drv->cuMemcpyHtoD(t, host, sizeof *host * (size_t)s->world),
	                        "cuMemcpyHtoD")) {
		rt->drv->cuMemFree(t);
		ok = false;
	}
	free(host);
	if (!ok)
		return NULL;
	s->table = t;
	return (const void *)(uintptr_t)t;
}

void blk_symmetric_destroy(BlkSymmetric *s)
{
	if (!s || !blk_handle_ok(s, BLK_TAG_SYMMETRIC, "blk_symmetric_destroy"))
		return;
	if (blk_rt_enter(s->rt, "blk_symmetric_destroy")) {
		if (s->table)
			s->rt->drv->cuMemFree(s->table);
		for (int r = 0; r < s->world; r++)
			unmap_rank(s, r);
	}
	free_shell(s);
}
