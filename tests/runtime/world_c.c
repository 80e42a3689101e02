/* world_c.c - a kernel across two GPUs from C alone: two processes (fork),
 * each a runtime on its own GPU, symmetric buffers from the CUDA driver's
 * virtual memory management (blk_symmetric_*), their descriptors passed
 * over a Unix socket (SCM_RIGHTS), then a ring of signals and peer reads:
 *
 *   each rank writes x = 100 * rank + i into its buffer, meets the other at
 *   rank_barrier, and reads the next rank's x into y.
 *
 * Exit 0 when both ranks read what the other wrote, 77 (skipped) without
 * two GPUs, 1 otherwise.  Run by `meson test` (skipped on CI's machine) and
 * on the GPU machine from carry/.
 */
#include <blk.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N = 4096, WORLD = 2 };

static const char *source =
	"kernel ring[BN = 1024](x: inout symmetric f32[N] block (BN,) index (i) -> (i),\n"
	"                       y: out f32[N] block (BN,) index (i) -> (i),\n"
	"                       bar: signal[G]) grid (cdiv(N, BN)) {\n"
	"    rank_barrier(bar.at[program_id(0)]);\n"
	"    y[...] = x.on((my_rank() + 1) % world())[...];\n"
	"    rank_barrier(bar.at[program_id(0) + cdiv(N, BN)]);\n"
	"}\n";

/* One descriptor over the socket, as SCM_RIGHTS. */
static int send_fd(int sock, int fd)
{
	char c = 0, buf[CMSG_SPACE(sizeof(int))];
	struct iovec io = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof buf };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof fd);
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char c, buf[CMSG_SPACE(sizeof(int))];
	struct iovec io = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof buf };
	if (recvmsg(sock, &m, 0) != 1)
		return -1;
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	int fd = -1;
	if (h && h->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(h), sizeof fd);
	return fd;
}

#define CHECK(c)                                                                          \
	do {                                                                                  \
		if (!(c)) {                                                                       \
			fprintf(stderr, "rank %d: %s failed: %s\n", rank, #c, blk_runtime_last_error(rt)); \
			return 1;                                                                     \
		}                                                                                 \
	} while (0)

static int run_rank(int rank, int sock)
{
	char err[512];
	int gpus = blk_device_count(err, sizeof err);
	if (gpus < WORLD) { /* (each process asks: CUDA must not start before the fork) */
		if (rank == 0)
			printf("skipped: %d GPU%s (%s)\n", gpus, gpus == 1 ? "" : "s", gpus < 0 ? err : "two needed");
		return 77;
	}
	BlkRuntime *rt = blk_runtime_create(rank, err, sizeof err);
	if (!rt) {
		fprintf(stderr, "rank %d: %s\n", rank, err);
		return 1;
	}
	CHECK(blk_runtime_set_world(rt, rank, WORLD));
	enum { G = 2 * (N / 1024) };
	size_t xbytes = N * sizeof(float), bytes = xbytes + G * sizeof(int32_t);
	BlkSymmetric *s = blk_symmetric_create(rt, bytes, rank, WORLD);
	CHECK(s != NULL);
	int mine = blk_symmetric_export(s);
	CHECK(mine >= 0);
	if (send_fd(sock, mine) != 0)
		return 1;
	int theirs = recv_fd(sock);
	close(mine);
	CHECK(theirs >= 0);
	CHECK(blk_symmetric_import(s, 1 - rank, theirs));
	close(theirs);
	const void *peers = blk_symmetric_peers(s);
	CHECK(peers != NULL);
	char *base = blk_symmetric_data(s);
	float host[N];
	for (int i = 0; i < N; i++)
		host[i] = (float)(100 * rank + i);
	CHECK(blk_memcpy_htod(rt, base, host, xbytes));
	CHECK(blk_memset(rt, base + xbytes, 0, G * sizeof(int32_t)));
	void *y = NULL;
	CHECK(blk_mem_alloc(rt, xbytes, &y));
	BlkProgram *p = blk_program_load_source(rt, "ring", source, NULL, 0);
	CHECK(p != NULL);
	BlkFunc *f = blk_program_kernel(p, "ring");
	CHECK(f != NULL);
	int64_t n = N, g = G;
	BlkTensor t[3] = { blk_tensor_make(base, BLK_DTYPE_F32, 1, &n), blk_tensor_make(y, BLK_DTYPE_F32, 1, &n),
	                   blk_tensor_make(base + xbytes, BLK_DTYPE_I32, 1, &g) };
	t[0].peers = t[2].peers = peers;
	for (int k = 0; k < 3; k++) /* the signals come back to 0: the same buffer again */
		CHECK(blk_launch(f, t, 3, NULL));
	CHECK(blk_synchronize(rt));
	CHECK(blk_memcpy_dtoh(rt, host, y, xbytes));
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += host[i] != (float)(100 * (1 - rank) + i);
	int32_t sig[G];
	CHECK(blk_memcpy_dtoh(rt, sig, base + xbytes, sizeof sig));
	for (int i = 0; i < G; i++)
		bad += sig[i] != 0;
	/* neither rank unmaps before the other is done reading */
	char c = 0;
	if (write(sock, &c, 1) != 1 || read(sock, &c, 1) != 1)
		return 1;
	blk_program_destroy(p);
	blk_mem_free(rt, y);
	blk_symmetric_destroy(s);
	blk_runtime_destroy(rt);
	printf("rank %d: %s\n", rank, bad ? "WRONG" : "read the other rank's x through peers");
	return bad != 0;
}

int main(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return 1;
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) { /* each end in one process: a rank that fails closes it, and the other's read ends */
		close(sv[0]);
		_exit(run_rank(1, sv[1]));
	}
	close(sv[1]);
	int r0 = run_rank(0, sv[0]), st = 0;
	close(sv[0]);
	waitpid(child, &st, 0);
	int r1 = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	if (r0 == 77 && r1 == 77)
		return 77;
	return r0 || r1 ? 1 : 0;
}
