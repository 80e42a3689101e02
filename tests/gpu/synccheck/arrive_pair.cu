// arrive_pair.cu - the smallest kernel with the producer/consumer pattern of
// blk's warp-specialized loops whose copies include pieces too narrow for
// cp.async, run under `compute-sanitizer --tool synccheck` (run.sh).
//
// One CTA of 256 threads: warps 4-7 (producers) copy slab i of `src` into
// slot i % S of shared memory by cp.async, 4 bytes a thread, and arrive on
// full[slot]; warps 0-3 (consumers) wait for full[slot], add the slab up and
// arrive on empty[slot], which the producers wait for before they reuse the
// slot.  full[] counts 128 arrivals.
//
// PAIR=1 (what blk emits where a copy also stores plainly): each producer
// thread's cp.async.mbarrier.arrive (without .noinc: it raises the pending
// count before its own arrive, so it is not one of the 128) and then a
// plain mbarrier.arrive (the counted one, which releases the plain
// stores).  The phase completes once every thread has arrived and every
// cp.async has landed: correct by the PTX ISA's definition of the two
// instructions, and the kernel's sums come out right.
// PAIR=0: cp.async.mbarrier.arrive.noinc alone (the counted arrival).
#include <stdint.h>

#ifndef PAIR
#define PAIR 1
#endif
enum { S = 3, N = 12, T = 128 };

__device__ static void wait_parity(uint32_t bar, uint32_t parity)
{
	asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W; }"
	             :: "r"(bar), "r"(parity) : "memory");
}

extern "C" __global__ void __launch_bounds__(256) arrive_pair(const float *src, float *out)
{
	__shared__ __align__(16) float buf[S][T];
	__shared__ __align__(8) uint64_t full[S], empty[S];
	int tid = threadIdx.x;
	if (tid == 0)
		for (int s = 0; s < S; s++) {
			asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"((uint32_t)__cvta_generic_to_shared(&full[s])), "r"(T));
			asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"((uint32_t)__cvta_generic_to_shared(&empty[s])), "r"(T));
		}
	__syncthreads();
	if (tid < T) { /* consumers */
		float acc = 0;
		for (int i = 0; i < N; i++) {
			int s = i % S;
			wait_parity((uint32_t)__cvta_generic_to_shared(&full[s]), (i / S) & 1);
			acc += buf[s][tid];
			asm volatile("mbarrier.arrive.shared.b64 _, [%0];" :: "r"((uint32_t)__cvta_generic_to_shared(&empty[s])) : "memory");
		}
		out[tid] = acc;
	} else { /* producers */
		int p = tid - T;
		for (int i = 0; i < N; i++) {
			int s = i % S;
			wait_parity((uint32_t)__cvta_generic_to_shared(&empty[s]), ((i / S) & 1) ^ 1);
			uint32_t dst = (uint32_t)__cvta_generic_to_shared(&buf[s][p]);
			uint32_t fb = (uint32_t)__cvta_generic_to_shared(&full[s]);
			asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(dst), "l"(src + i * T + p) : "memory");
#if PAIR
			asm volatile("cp.async.mbarrier.arrive.shared.b64 [%0];" :: "r"(fb) : "memory");
			asm volatile("mbarrier.arrive.shared.b64 _, [%0];" :: "r"(fb) : "memory");
#else
			asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" :: "r"(fb) : "memory");
#endif
		}
	}
}
