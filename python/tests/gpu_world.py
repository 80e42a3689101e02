"""blk kernels across GPUs, one process a GPU, checked against
torch.distributed (NCCL) on the same data:

    torchrun --nproc_per_node=2 python/tests/gpu_world.py
    BLK_WORLD_TIMEOUT_TEST=1 BLK_SIGNAL_TIMEOUT=2 torchrun --nproc_per_node=2 python/tests/gpu_world.py

Symmetric tensors come from torch's symmetric memory; each case's result
is compared with what torch.distributed computes.  The second form runs a
kernel whose waits nobody answers: it must fail with blk's timeout message
within BLK_SIGNAL_TIMEOUT seconds, not hang (it leaves the CUDA context
unusable, so it runs alone).  Rank 0 prints "N passed, N failed".
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import blk  # noqa: E402

dist.init_process_group("nccl")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(RANK)
DEV = torch.device("cuda", RANK)
GROUP = dist.group.WORLD.group_name
if hasattr(symm, "enable_symm_mem_for_group") and torch.__version__ < "2.10":
    symm.enable_symm_mem_for_group(GROUP)

RING = """
kernel ring[BN = 256](x: in symmetric f32[N] block (BN,) index (i) -> (i), y: out f32[N] block (BN,) index (i) -> (i),
                      bar: signal[G]) grid (cdiv(N, BN)) {
    rank_barrier(bar.at[program_id(0)]);   // every rank's x is written
    let next = (my_rank() + 1) % world();
    y[...] = x.on(next)[...] * 2.0 + my_rank().astype(f32);
}
"""

ALL_GATHER = """
// push: each rank writes its rows into every rank's ag and signals there
kernel ag[BM = 64](x: in bf16[MS, K] block (BM, K) index (i) -> (i, 0),
                   ag: inout symmetric bf16[R, MS, K], flags: signal[R, T]) grid (cdiv(MS, BM)) {
    let me = my_rank();
    let i = program_id(0);
    let rows = x[...];
    fori_loop(0, world()) |p| {
        ag.on(p)[me, ds(i * BM, BM), :] = rows;
        signal_add(flags.on(p).at[me, i], 1);
    };
    fori_loop(0, world()) |p| { signal_wait(flags.at[p, i], 1); };
}
"""

ALL_REDUCE = """
// pull: after a barrier, every rank sums every rank's block of x
kernel allreduce[BN = 1024](x: in symmetric bf16[N] block (BN,) index (i) -> (i),
                            y: out bf16[N] block (BN,) index (i) -> (i), bar: signal[G]) grid (cdiv(N, BN)) {
    rank_barrier(bar.at[program_id(0)]);
    let s = fori_loop(0, world(), zeros((BN,), f32)) |p, s| { s + x.on(p)[...].astype(f32) };
    y[...] = s.astype(bf16);
}
"""

PULL_MATMUL = """
// all-gather + matmul that pulls: each tile reads its A rows from the rank
// that owns them, its K loop's slabs copied over NVLink (cp.async)
kernel pull[T = bf16, BM = 128, BN = 128, BK = 64, num_warps = 8, num_stages = 4](
    a: in symmetric T[MS, K],
    b: in T[K, N] block (K, BN) index (i, j) -> (0, j),
    c: out T[RMS, N] block (BM, BN) index (i, j) -> ((i + my_rank() * (MS ~/ BM)) % (RMS ~/ BM), j),
    bar: signal[G],
) grid (cdiv(RMS, BM), cdiv(N, BN)) {
    let i = program_id(0);
    let tm = (i + my_rank() * (MS ~/ BM)) % (RMS ~/ BM);
    let s = tm ~/ (MS ~/ BM);
    let r0 = (tm % (MS ~/ BM)) * BM;
    rank_barrier(bar.at[i * cdiv(N, BN) + program_id(1)]);   // every rank's a is written
    let acc = fori_loop(0, cdiv(K, BK), zeros((BM, BN), f32)) |k, acc| {
        acc + dot(a.on(s)[ds(r0, BM), ds(k * BK, BK)], b[ds(k * BK, BK), :])
    };
    c[...] = acc.astype(T);
}
"""

EX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
results = []


def case(fn):
    t0 = time.perf_counter()
    try:
        fn()
        results.append((fn.__name__, None))
        ok = "PASS"
    except Exception as e:  # noqa: BLE001 - every failure is reported, by every rank
        import traceback
        results.append((fn.__name__, e))
        ok = f"FAIL (rank {RANK}) {str(e).splitlines()[0]}"
        traceback.print_exc()
    if RANK == 0 or not ok.startswith("PASS"):
        print(f"{ok} {fn.__name__} world {WORLD} ({(time.perf_counter() - t0) * 1e3:.0f} ms)", flush=True)


def signals(*shape):
    return symm.empty(shape, dtype=torch.int32, device=DEV).zero_()


WHO = """
kernel who(x: in symmetric i32[4], y: out i32[5]) {
    y[0] = my_rank();
    y[1] = world();
    y[2] = x.on(0)[0];
    y[3] = x.on(world() - 1)[1];
    y[4] = x.on(world() - 1).on(0)[1];   // a peer of a peer is that peer
}
"""


def test_identity():
    """my_rank, world and a read of the first and last ranks' x."""
    x = symm.empty(4, dtype=torch.int32, device=DEV)
    x.copy_(torch.tensor([100 * RANK, 100 * RANK + 1, 0, 0], dtype=torch.int32))
    h = symm.rendezvous(x, GROUP)
    print(f"rank {RANK}: handle rank {h.rank} world {h.world_size} buffers "
          f"{[hex(p) for p in h.buffer_ptrs]} x at {hex(x.data_ptr())}", flush=True)
    dist.barrier()
    torch.cuda.synchronize()
    y = blk.kernel(WHO)(x)
    torch.cuda.synchronize()
    got = y.tolist()
    assert got == [RANK, WORLD, 0, 100 * (WORLD - 1) + 1, 1], f"rank {RANK}: {got}"


def test_ring():
    k = blk.kernel(RING)
    for n in (1000, 4096, 65536 + 7):
        x = symm.empty(n, dtype=torch.float32, device=DEV)
        x.copy_(torch.randn(n, device=DEV) + 100 * RANK)
        bar = signals((n + 255) // 256)
        y = k(x, bar=bar)
        want = torch.empty(WORLD, n, device=DEV)
        dist.all_gather_into_tensor(want, x)
        torch.testing.assert_close(y, want[(RANK + 1) % WORLD] * 2 + RANK)
        torch.cuda.synchronize()
        dist.barrier()  # every rank's call is done: the signals are back at 0
        assert not bar.any(), "the barrier's signals are back at 0"
        dist.barrier()  # (before another rank's next call adds to them)
        for _ in range(3):  # again, on the same signals
            y = k(x, bar=bar)
        torch.cuda.synchronize()
        torch.testing.assert_close(y, want[(RANK + 1) % WORLD] * 2 + RANK)


def test_all_gather():
    k = blk.kernel(ALL_GATHER)
    for ms, kk in ((128, 256), (1000, 512), (64, 8)):
        x = torch.randn(ms, kk, device=DEV).to(torch.bfloat16)
        ag = symm.empty((WORLD, ms, kk), dtype=torch.bfloat16, device=DEV).fill_(-1)
        flags = signals(WORLD, (ms + 63) // 64)
        k(x, ag, flags)
        want = torch.empty(WORLD * ms, kk, device=DEV, dtype=torch.bfloat16)
        dist.all_gather_into_tensor(want, x)
        torch.cuda.synchronize()
        dist.barrier()
        assert torch.equal(ag.reshape(WORLD * ms, kk), want)
        assert not flags.any()
        dist.barrier()


def test_all_reduce():
    k = blk.kernel(ALL_REDUCE)
    for n in (1 << 20, 12345):
        x = symm.empty(n, dtype=torch.bfloat16, device=DEV)
        x.copy_(torch.randn(n, device=DEV))
        bar = signals((n + 1023) // 1024)
        y = k(x, bar=bar)
        want = x.float()
        dist.all_reduce(want)
        torch.testing.assert_close(y.float(), want, atol=2e-2 * WORLD, rtol=1e-2)


def test_allgather_matmul():
    """examples/allgather_matmul.blk against all_gather_into_tensor + matmul."""
    k = blk.kernel(f"{EX}/allgather_matmul.blk")
    for ms, kk, n in ((256, 512, 384), (1024, 1024, 1024)):
        torch.manual_seed(RANK)
        a = torch.randn(ms, kk, device=DEV).to(torch.bfloat16)
        b = torch.randn(kk, n, device=DEV).to(torch.bfloat16)
        ag = symm.empty((WORLD * ms, kk), dtype=torch.bfloat16, device=DEV).fill_(-1)
        ready, started = signals(WORLD * ms // 128), signals(WORLD)
        c = torch.empty(WORLD * ms, n, device=DEV, dtype=torch.bfloat16)
        full = torch.empty(WORLD * ms, kk, device=DEV, dtype=torch.bfloat16)
        dist.all_gather_into_tensor(full, a)
        want = full.float() @ b.float()
        for _ in range(3):  # again on the same signals: the protocol leaves them at 0
            c.fill_(0)
            k(a, b, ag, c, ready, started)
            torch.cuda.synchronize()
            assert torch.equal(ag, full)
            torch.testing.assert_close(c.float(), want, atol=0.5, rtol=2e-2)
        torch.cuda.synchronize()
        dist.barrier()
        assert not ready.any() and not started.any()
        dist.barrier()


def test_matmul_reduce_scatter():
    """examples/matmul_reduce_scatter.blk against matmul + reduce_scatter_tensor."""
    k = blk.kernel(f"{EX}/matmul_reduce_scatter.blk")
    for ms, kk, n in ((256, 512, 384), (1024, 1024, 1024)):
        torch.manual_seed(RANK)
        a = torch.randn(WORLD * ms, kk, device=DEV).to(torch.bfloat16)
        b = torch.randn(kk, n, device=DEV).to(torch.bfloat16)
        stage = symm.empty((WORLD, ms, n), dtype=torch.bfloat16, device=DEV)
        arrived, started = signals((ms // 128) * ((n + 127) // 128)), signals(WORLD)
        part = (a.float() @ b.float())
        want = torch.empty(ms, n, device=DEV)
        dist.reduce_scatter_tensor(want, part)
        for _ in range(3):
            c = k(a, b, stage, arrived=arrived, started=started)
            torch.cuda.synchronize()
            torch.testing.assert_close(c.float(), want, atol=0.5 * WORLD, rtol=2e-2)
        dist.barrier()
        assert not arrived.any() and not started.any()
        dist.barrier()


def test_pull_matmul():
    """A dot whose A slabs come from peers (cp.async over NVLink), against
    all_gather_into_tensor + matmul."""
    k = blk.kernel(PULL_MATMUL)
    for ms, kk, n in ((256, 512, 384), (1024, 1024, 1024)):
        torch.manual_seed(RANK)
        a = symm.empty((ms, kk), dtype=torch.bfloat16, device=DEV)
        a.copy_(torch.randn(ms, kk, device=DEV))
        b = torch.randn(kk, n, device=DEV).to(torch.bfloat16)
        bar = signals((WORLD * ms // 128) * ((n + 127) // 128))
        full = torch.empty(WORLD * ms, kk, device=DEV, dtype=torch.bfloat16)
        dist.all_gather_into_tensor(full, a)
        c = torch.empty(WORLD * ms, n, device=DEV, dtype=torch.bfloat16)
        k(a, b, c, bar)
        torch.cuda.synchronize()
        torch.testing.assert_close(c.float(), full.float() @ b.float(), atol=0.5, rtol=2e-2)
        dist.barrier()
        assert not bar.any()
        dist.barrier()


def timeit(fn, reps=50):
    """As ../shared/bench/mgpu_anchor.py times: a barrier before each
    rep, CUDA events, the median, the max over the ranks."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    ts = []
    for _ in range(reps):
        dist.barrier()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    t = torch.tensor([sorted(ts)[len(ts) // 2]], device=DEV)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def bench_fused():
    """The issue's shapes: blk's fused kernels beside NCCL + cuBLAS, cuBLAS
    alone and torch's fused symmetric-memory ops, in one process."""
    kag = blk.kernel(f"{EX}/allgather_matmul.blk")
    krs = blk.kernel(f"{EX}/matmul_reduce_scatter.blk")
    for ms, kk, n, dt in ((1024, 4096, 4096, torch.float16), (4096, 8192, 8192, torch.bfloat16),
                          (2048, 8192, 28672 // WORLD, torch.bfloat16)):
        tname = "f16" if dt == torch.float16 else "bf16"
        a = torch.randn(ms, kk, device=DEV, dtype=dt)
        b = torch.randn(kk, n, device=DEV, dtype=dt)
        full = torch.empty(WORLD * ms, kk, device=DEV, dtype=dt)
        ag = symm.empty((WORLD * ms, kk), dtype=dt, device=DEV)
        c = torch.empty(WORLD * ms, n, device=DEV, dtype=dt)
        ready, started = signals(WORLD * ms // 128), signals(WORLD)
        k = kag.with_params(T=tname)
        k(a, b, ag, c, ready, started)
        dist.all_gather_into_tensor(full, a)
        torch.cuda.synchronize()
        err = (c.float() - full.float() @ b.float()).abs().max().item()
        r = dict(op="all_gather_matmul", shard=ms, K=kk, N=n, dtype=tname, max_err=round(err, 3))
        r["blk_ms"] = timeit(lambda: k(a, b, ag, c, ready, started))
        r["nccl_cublas_ms"] = timeit(lambda: (dist.all_gather_into_tensor(full, a), full @ b))
        r["cublas_ms"] = timeit(lambda: full @ b)
        try:
            r["torch_fused_ms"] = timeit(
                lambda: torch.ops.symm_mem.fused_all_gather_matmul(a, [b], 0, GROUP))
        except Exception as e:  # noqa: BLE001
            r["torch_fused"] = str(e).splitlines()[0][:80]
        if RANK == 0:
            print("BENCH", r, flush=True)
        # matmul + reduce-scatter: [W*ms, kk/W] x [kk/W, n]
        a2 = torch.randn(WORLD * ms, kk // WORLD, device=DEV, dtype=dt)
        b2 = torch.randn(kk // WORLD, n, device=DEV, dtype=dt)
        stage = symm.empty((WORLD, ms, n), dtype=dt, device=DEV)
        rs = torch.empty(ms, n, device=DEV, dtype=dt)
        out = torch.empty(ms, n, device=DEV, dtype=dt)
        arrived, started2 = signals((ms // 128) * ((n + 127) // 128)), signals(WORLD)
        k2 = krs.with_params(T=tname)
        k2(a2, b2, stage, out, arrived, started2)
        dist.reduce_scatter_tensor(rs, a2 @ b2)
        torch.cuda.synchronize()
        err = (out.float() - rs.float()).abs().max().item()
        r = dict(op="matmul_reduce_scatter", M=WORLD * ms, K=kk // WORLD, N=n, dtype=tname,
                 max_err=round(err, 3))
        r["blk_ms"] = timeit(lambda: k2(a2, b2, stage, out, arrived, started2))
        r["nccl_cublas_ms"] = timeit(lambda: dist.reduce_scatter_tensor(rs, a2 @ b2))
        r["cublas_ms"] = timeit(lambda: a2 @ b2)
        try:
            r["torch_fused_ms"] = timeit(
                lambda: torch.ops.symm_mem.fused_matmul_reduce_scatter(a2, b2, "sum", 0, GROUP))
        except Exception as e:  # noqa: BLE001
            r["torch_fused"] = str(e).splitlines()[0][:80]
        if RANK == 0:
            print("BENCH", r, flush=True)


def bench_all_reduce():
    """examples/allreduce.blk against NCCL's all_reduce, same process."""
    k = blk.kernel(f"{EX}/allreduce.blk")
    for n in (1 << 20, 1 << 24):
        x = symm.empty(n, dtype=torch.bfloat16, device=DEV)
        x.copy_(torch.randn(n, device=DEV))
        bar = signals(2 * ((n + 2047) // 2048))
        y = symm.empty(n, dtype=torch.bfloat16, device=DEV)
        z = x.clone()
        k(x, y, bar)
        want = x.float()
        dist.all_reduce(want)
        torch.testing.assert_close(y.float(), want, atol=2e-2 * WORLD, rtol=1e-2)
        tb = timeit(lambda: k(x, y, bar))
        tn = timeit(lambda: dist.all_reduce(z))
        if RANK == 0:
            print(f"BENCH all_reduce bf16 n={n} world {WORLD}: blk {tb:.4f} ms, NCCL {tn:.4f} ms "
                  f"({torch.cuda.get_device_name()})", flush=True)


def test_timeout():
    """A wait nobody answers: blk's message, then the launch fails."""
    k = blk.kernel("kernel stuck(y: out i32[1], s: signal[1]) { signal_wait(s.at[0], 1); y[0] = 1; }")
    s = signals(1)
    t0 = time.time()
    k(torch.zeros(1, dtype=torch.int32, device=DEV), s)
    try:
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - torch raises RuntimeError
        print(f"rank {RANK}: failed after {time.time() - t0:.1f} s as it should: "
              f"{str(e).splitlines()[0]}", flush=True)
        return
    raise AssertionError("the stuck kernel finished")


if os.environ.get("BLK_WORLD_TIMEOUT_TEST") == "1":
    test_timeout()
    os._exit(0)  # the context is gone: no clean shutdown

for t in (test_identity, test_ring, test_all_gather, test_all_reduce, test_allgather_matmul,
          test_matmul_reduce_scatter, test_pull_matmul):
    case(t)
if os.environ.get("BLK_WORLD_BENCH") == "1" and not any(e for _, e in results):
    bench_all_reduce()
    bench_fused()
failed = sum(1 for _, e in results if e is not None)
if RANK == 0:
    print(f"{len(results) - failed} passed, {failed} failed", flush=True)
dist.destroy_process_group()
sys.exit(1 if failed else 0)
