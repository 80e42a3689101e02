/* run_arrive.c - loads arrive_pair's PTX (PAIR=0 or 1, argv[1]) through the
 * CUDA driver, runs it once and checks every consumer's sum: 0 if right.
 * run.sh runs it under compute-sanitizer's synccheck. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                          \
	do {                                                              \
		CUresult r_ = (x);                                        \
		if (r_ != CUDA_SUCCESS) {                                 \
			const char *s_ = "?";                             \
			cuGetErrorString(r_, &s_);                        \
			fprintf(stderr, "%s: %s\n", #x, s_);              \
			return 1;                                         \
		}                                                         \
	} while (0)

enum { S = 3, N = 12, T = 128 };

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: run_arrive FILE.ptx\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	static char ptx[1 << 20];
	size_t n = fread(ptx, 1, sizeof ptx - 1, f);
	fclose(f);
	ptx[n] = 0;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoadData(&mod, ptx));
	CHECK(cuModuleGetFunction(&fn, mod, "arrive_pair"));
	float src[N * T], out[T];
	for (int i = 0; i < N * T; i++)
		src[i] = (float)(i % 7);
	CUdeviceptr dsrc, dout;
	CHECK(cuMemAlloc(&dsrc, sizeof src));
	CHECK(cuMemAlloc(&dout, sizeof out));
	CHECK(cuMemcpyHtoD(dsrc, src, sizeof src));
	void *args[] = { &dsrc, &dout };
	CHECK(cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	CHECK(cuMemcpyDtoH(out, dout, sizeof out));
	int bad = 0;
	for (int t = 0; t < T; t++) {
		float want = 0;
		for (int i = 0; i < N; i++)
			want += src[i * T + t];
		bad += out[t] != want;
	}
	printf("%s: %d of %d sums wrong\n", argv[1], bad, T);
	return bad != 0;
}
