"""What the native CUDA stack reaches on the same GPU at the decode shapes of issue 9's two open targets: a weight
read of 33-62 MB in one kernel (the quantized GEMV >= 70% target) and decode attention over an 8k-key f16 KV cache
(the flash-decoding >= 50% target). The peer of bench/dispatch.ts (plain reads) and bench/kernels.ts (`linear` at
M = 1, `--attention`): run them in the same call and compare each stack's fraction of its own ceiling.

Every case is timed as bench/kernels.ts times its calls "in a pass": R calls back to back, here captured once in a
CUDA graph (no host launch cost between them) and replayed; per call = best replay / R. Inputs rotate over copies that
together exceed the L2 (>= 256 MB), so each call reads from memory. The ceiling is the best of a few plain reductions
over 1 GiB. Cases:
  read       torch.sum over an f32 buffer of the given bytes (a plain streaming read in one kernel)
  gemv_f16   F.linear(x [1, K], W [N, K]) in f16 (cuBLAS), bytes = W
  gemv_int4  torch's tinygemm int4 GEMV (_weight_int4pack_mm, group 32, bf16 activations), bytes = the packed nibbles
             plus the bf16 scale/zero pairs
  sdpa       F.scaled_dot_product_attention decode (1 query, 32 query heads, 8 KV heads of 128, f16 cache, GQA) with
             each backend that takes it, bytes = K + V

Usage (on the GPU machine): python3 bench/torch_floor.py --out FILE [--reps 64]
"""
import argparse
import json
import platform

import torch
import torch.nn.functional as F

from receipt_commit import receipt_commit

MIB = 1 << 20
ROTATE = 256 * MIB


def copies_for(nbytes: int) -> int:
    return max(2, min(64, -(-ROTATE // nbytes)))


def best_ms(run, tries: int) -> float:
    """The least GPU time (ms) between two events around run(), over `tries` runs."""
    best = float("inf")
    for _ in range(tries):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        best = min(best, a.elapsed_time(b))
    return best


def timed(fn_list, reps: int) -> dict:
    """Per-call GPU time (us) of the calls in fn_list (cycled to `reps` calls) back to back in one CUDA graph, best of
    7 replays; also without the graph (launched from Python, for reference)."""
    calls = [fn_list[i % len(fn_list)] for i in range(reps)]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in calls[: len(fn_list)]:
            f()  # warm-up (and cuBLAS / backend workspace allocation) outside the capture
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for f in calls:
            f()

    def eager():
        for f in calls:
            f()

    return {"us": best_ms(g.replay, 7) * 1e3 / reps, "eagerUs": best_ms(eager, 3) * 1e3 / reps}


def ceiling() -> float:
    """GB/s of the best plain reduction over 1 GiB (f32), best of 5 after a warm-up."""
    x = torch.ones(1 << 28, device="cuda", dtype=torch.float32)
    for _ in range(3):
        torch.sum(x)
    best = best_ms(lambda: torch.sum(x), 5)
    del x
    return (1 << 30) / (best * 1e-3) / 1e9


def case(name: str, shape: str, nbytes: int, fns, reps: int, ceil: float, **extra) -> dict:
    t = timed(fns, reps)
    gbs = nbytes / (t["us"] * 1e-6) / 1e9
    row = {"case": name, "shape": shape, "bytes": nbytes, **t, "GBps": gbs, "fractionOfCeiling": gbs / ceil, **extra}
    for k in extra.get("kernels", []):
        print(f"    kernel {k['us']:8.2f} us  {k['name'][:110]}")
    print(f"{name:10s} {shape:22s} {nbytes / 1e6:8.1f} MB {t['us']:9.2f} us  {gbs:7.0f} GB/s  {100 * gbs / ceil:5.1f}%"
          f"  (eager {t['eagerUs']:.2f} us)", flush=True)
    return row


def reads(sizes, reps, ceil):
    rows = []
    for nbytes in sizes:
        n = nbytes // 4
        bufs = [torch.ones(n, device="cuda", dtype=torch.float32) for _ in range(copies_for(nbytes))]
        rows.append(case("read", f"{nbytes} B", n * 4, [lambda b=b: torch.sum(b) for b in bufs], reps, ceil))
        del bufs
    return rows


def gemv_f16(shapes, reps, ceil):
    rows = []
    for N, K in shapes:
        nbytes = N * K * 2
        ws = [torch.randn(N, K, device="cuda", dtype=torch.float16) * 0.02 for _ in range(copies_for(nbytes))]
        x = torch.randn(1, K, device="cuda", dtype=torch.float16)
        out = torch.empty(1, N, device="cuda", dtype=torch.float16)
        fns = [lambda w=w: torch.matmul(x, w.t(), out=out) for w in ws]
        rows.append(case("gemv_f16", f"{N}x{K}", nbytes, fns, reps, ceil))
        del ws
    return rows


def gemv_int4(shapes, reps, ceil):
    """tinygemm's int4 GEMV (torch._weight_int4pack_mm), group size 32: the closest native peer of a 4-bit block GEMV."""
    rows = []
    group = 32
    for N, K in shapes:
        try:
            q = torch.randint(0, 16, (N, K), device="cuda", dtype=torch.int32)
            packed_u8 = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)
            packed = torch._convert_weight_to_int4pack(packed_u8, 8)
            sz = torch.randn(K // group, N, 2, device="cuda", dtype=torch.bfloat16) * 0.01
            nbytes = N * K // 2 + sz.numel() * 2
            ws = [packed.clone() for _ in range(copies_for(nbytes))]
            szs = [sz.clone() for _ in range(len(ws))]
            x = torch.randn(1, K, device="cuda", dtype=torch.bfloat16)
            fns = [lambda w=w, s=s: torch._weight_int4pack_mm(x, w, group, s) for w, s in zip(ws, szs)]
            rows.append(case("gemv_int4", f"{N}x{K}", nbytes, fns, reps, ceil, group=group))
            del ws, szs
        except Exception as e:  # the op's signature moves between torch versions: say so in the receipt
            print(f"gemv_int4 {N}x{K}: {type(e).__name__}: {e}", flush=True)
            rows.append({"case": "gemv_int4", "shape": f"{N}x{K}", "error": f"{type(e).__name__}: {e}"[:500]})
    return rows


def kernels_of(fns) -> list:
    """The GPU kernels one call launches (torch.profiler, CUDA activity), name and us each, after a warm-up: how many
    passes a backend makes."""
    from torch.profiler import ProfilerActivity, profile

    try:
        fns[0]()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fns[1 % len(fns)]()
            torch.cuda.synchronize()
        out = []
        for e in prof.events():
            t = getattr(e, "device_time_total", None)
            if t is None:
                t = getattr(e, "cuda_time_total", 0)
            if str(e.device_type).endswith("CUDA") and t > 0:
                out.append({"name": e.name[:160], "us": round(t, 2)})
        return out
    except Exception as e:  # the profiler's event fields move between torch versions
        return [{"name": f"profiler failed: {type(e).__name__}: {e}"[:160], "us": 0}]


def sdpa(lengths, reps, ceil, heads=32, kv_heads=8, dim=128):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    for L in lengths:
        nbytes = 2 * kv_heads * L * dim * 2
        n = copies_for(nbytes)
        ks = [torch.randn(1, kv_heads, L, dim, device="cuda", dtype=torch.float16) for _ in range(n)]
        vs = [torch.randn(1, kv_heads, L, dim, device="cuda", dtype=torch.float16) for _ in range(n)]
        q = torch.randn(1, heads, 1, dim, device="cuda", dtype=torch.float16)
        for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH):
            def one(k, v, be=be):
                with sdpa_kernel([be]):
                    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            try:
                fns = [lambda k=k, v=v: one(k, v) for k, v in zip(ks, vs)]
                rows.append(case("sdpa", f"{L} keys", nbytes, fns, reps, ceil, backend=be.name, kernels=kernels_of(fns)))
            except Exception as e:
                print(f"sdpa {L} keys {be.name}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                rows.append({"case": "sdpa", "shape": f"{L} keys", "backend": be.name, "error": f"{type(e).__name__}: {e}"[:500]})
        del ks, vs
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="torch-floor.json")
    ap.add_argument("--reps", type=int, default=64, help="calls back to back in one CUDA graph")
    ap.add_argument("--read-bytes", default="33030144,47185920,62390272,66060288,132120576,264241152")
    ap.add_argument("--gemv-shapes", default="4096x4096,2048x8192,8192x2048,4096x14336,14336x4096,128256x4096")
    ap.add_argument("--int4-shapes", default="4096x14336,14336x4096,28672x4096,128256x4096")
    ap.add_argument("--attention-ctx", default="1024,8192,32768")
    a = ap.parse_args()
    if a.reps < 1:
        raise SystemExit(f"--reps: expected at least 1, got {a.reps}")

    def shapes(s):
        out = []
        for p in filter(None, s.split(",")):
            n, k = p.split("x")
            out.append((int(n), int(k)))
        return out

    torch.manual_seed(0)
    ceil = ceiling()
    print(f"ceiling {ceil:.0f} GB/s ({torch.cuda.get_device_name()})", flush=True)
    rows = reads([int(b) for b in a.read_bytes.split(",") if b], a.reps, ceil)
    rows += gemv_f16(shapes(a.gemv_shapes), a.reps, ceil)
    rows += gemv_int4(shapes(a.int4_shapes), a.reps, ceil)
    rows += sdpa([int(x) for x in a.attention_ctx.split(",") if x], a.reps, ceil)
    receipt = {
        "benchmark": "torch-floor",
        "commit": receipt_commit(),
        "machine": platform.node(),
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "method": "per call: best of 7 replays of one CUDA graph of `reps` calls back to back / reps; inputs rotate over "
                  "copies totalling >= 256 MB; ceiling: best torch.sum over 1 GiB of f32",
        "reps": a.reps,
        "ceilingGBps": ceil,
        "rows": rows,
    }
    with open(a.out, "w") as f:
        json.dump(receipt, f, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
