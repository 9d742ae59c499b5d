#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Times ampd's operations in peer libraries (CuPy, PyTorch) on the same GPU.

Each operation runs on device-resident data, timed with CUDA events (warm-up,
then the median of many repetitions, rotating among several inputs so the
50 MB L2 does not flatter small sizes; the all-equal input is one buffer). Bandwidth counts the same bytes as
bench/bench_kernels: read + written for reverse and transforms, read for
histograms, written for fill. The reference is a device-to-device copy of
the same size measured in the same run.

usage: python3 bench/peers.py [--sizes 1K,1M,64M,1G] [--reps 50]
"""
import argparse
import statistics
import sys

ROTATE = 4


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper()
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def human(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def timer_torch(torch, fn, inputs, reps):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(3):
        fn(inputs[i % len(inputs)])
    times = []
    for i in range(reps):
        x = inputs[i % len(inputs)]
        start.record()
        fn(x)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return statistics.median(times)


def timer_cupy(cp, fn, inputs, reps):
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for i in range(3):
        fn(inputs[i % len(inputs)])
    times = []
    for i in range(reps):
        x = inputs[i % len(inputs)]
        start.record()
        fn(x)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times)


def torch_ops(torch, n, dst):
    lut = torch.randint(0, 256, (256,), dtype=torch.uint8, device="cuda")
    return {
        "reverse": (lambda x: torch.flip(x, [0]), 2),
        "add": (lambda x: x.add(7), 2),
        "xor": (lambda x: x.bitwise_xor(0x5A), 2),
        "and": (lambda x: x.bitwise_and(0x0F), 2),
        "or": (lambda x: x.bitwise_or(0x80), 2),
        # into dst: filling the input would leave the later ops all-equal data
        "set": (lambda x: dst.fill_(9), 1),
        "map": (lambda x: lut[x.long()], 2),  # torch indexes with int64 only
        "hist256": (lambda x: torch.bincount(x, minlength=256), 1),
        "hist256-equal": ("equal", lambda x: torch.bincount(x, minlength=256), 1),
        "fill-int32": ("fill", lambda _: torch.arange(0, n // 4, dtype=torch.int32, device="cuda"), 1),
    }


def cupy_ops(cp, n, dst):
    lut = cp.random.randint(0, 256, 256, dtype=cp.uint8)
    return {
        "reverse": (lambda x: x[::-1].copy(), 2),
        "add": (lambda x: x + cp.uint8(7), 2),
        "xor": (lambda x: x ^ cp.uint8(0x5A), 2),
        "and": (lambda x: x & cp.uint8(0x0F), 2),
        "or": (lambda x: x | cp.uint8(0x80), 2),
        "set": (lambda x: dst.fill(9), 1),
        "map": (lambda x: lut[x], 2),
        "hist256": (lambda x: cp.bincount(x, minlength=256), 1),
        "hist256-equal": ("equal", lambda x: cp.bincount(x, minlength=256), 1),
        "fill-int32": ("fill", lambda _: cp.arange(0, n // 4, dtype=cp.int32), 1),
    }


def row(peer, op, n, bw, ratio):
    """Prints one result at once, so a run cut short keeps what it measured."""
    print(f"{peer:<6} {op:<14} {human(n):>6} {bw / 1e9:>9.1f} {ratio:>7.2f}", flush=True)


def unpack(spec):
    if isinstance(spec[0], str):
        return spec[0], spec[1], spec[2]
    return "random", spec[0], spec[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1K,64K,1M,16M,256M,1G")
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]

    print(f"{'peer':<6} {'op':<14} {'size':>6} {'GB/s':>9} {'x copy':>7}", flush=True)
    try:
        import torch
        have_torch = torch.cuda.is_available()
    except ImportError:
        have_torch = False
    try:
        import cupy as cp
        have_cupy = True
    except ImportError:
        have_cupy = False
    if not (have_torch or have_cupy):
        print("peers: neither PyTorch with CUDA nor CuPy is available", file=sys.stderr)
        return 1

    for n in sizes:
        if have_torch:
            rnd = [torch.randint(0, 256, (n,), dtype=torch.uint8, device="cuda") for _ in range(ROTATE)]
            eq = [torch.full((n,), 42, dtype=torch.uint8, device="cuda")]
            dst = torch.empty_like(rnd[0])
            t_copy = timer_torch(torch, lambda x: dst.copy_(x), rnd, args.reps)
            copy_bw = 2 * n / t_copy
            row("torch", "copy", n, copy_bw, 1.0)
            for name, spec in torch_ops(torch, n, dst).items():
                data, fn, factor = unpack(spec)
                inputs = eq if data == "equal" else rnd
                t = timer_torch(torch, fn, inputs, args.reps)
                bw = factor * n / t
                row("torch", name, n, bw, bw / copy_bw)
            del rnd, eq, dst
            torch.cuda.empty_cache()
        if have_cupy:
            rnd = [cp.random.randint(0, 256, n, dtype=cp.uint8) for _ in range(ROTATE)]
            eq = [cp.full(n, 42, dtype=cp.uint8)]
            dst = cp.empty_like(rnd[0])
            t_copy = timer_cupy(cp, lambda x: cp.copyto(dst, x), rnd, args.reps)
            copy_bw = 2 * n / t_copy
            row("cupy", "copy", n, copy_bw, 1.0)
            for name, spec in cupy_ops(cp, n, dst).items():
                data, fn, factor = unpack(spec)
                inputs = eq if data == "equal" else rnd
                t = timer_cupy(cp, fn, inputs, args.reps)
                bw = factor * n / t
                row("cupy", name, n, bw, bw / copy_bw)
            del rnd, eq, dst
            cp.get_default_memory_pool().free_all_blocks()

    return 0


if __name__ == "__main__":
    sys.exit(main())
