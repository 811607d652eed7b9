"""Compile the CUDA device's kernels for an H100 without a GPU: count the FMA instructions in the PTX,
assemble it with ptxas for the registers and shared memory each kernel takes, and (where nvdisasm is
installed) count the machine instructions a pair costs on the per-pair loop's common path.

    pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvrtc-cu12   # NVVM, NVRTC and ptxas, no driver needed
    pip install nvidia-cuda-nvdisasm                           # optional: the SASS counts
    NUMBA_ENABLE_CUDASIM=0 python docs/scripts/cuda_ptx_check.py [--dims 4,8,64]

numba-cuda asks the current device for its compute capability when it
compiles a device function; with no GPU this script answers sm_90 (H100).
The float64 ``sq`` sums (membership, diameter, k-th radii) must show
``mul.rn.f64`` and no ``fma.rn.f64``; the shift kernel's FMAs are its
``B += rho z`` accumulation (d of them), which may contract.

``loop:`` counts instructions of the per-pair loop (the largest loop with no
``bar.sync``: one pass per pair of a tile) outside its rare paths (in float32
kernels, the blocks with a ``mul.rn.f64``: the guard band's and the
pre-filters' exact float64 ``sq``).  ``cvt`` there is ``cvt.f64.f32``, which an
H100 issues at 16 per clock per multiprocessor against 128 float32 FMAs; the
float32 ``shift_sums`` should show 1 (its rho), the float32 diameter and
k-th radius none.  Exact for d small enough that the d-loops are unrolled (d = 8).

ptxas (``-arch=sm_90 -v``) refuses a kernel whose static shared memory
passes 48 KiB ("uses too much shared data"), which numba's simulator never
checks; the script exits 1 when any kernel fails to assemble.

``sass/pair`` (float32 kernels, with nvdisasm) counts the SASS instructions,
sm_90, that one pair of the per-pair loop issues on its common path: the
loop's basic blocks reachable from its head without taking the back edge,
less every block with a float64 ``sq`` or rho (``DMUL``, ``DSETP``,
``MUFU.*64H``: the guard band's and the pre-filters' exact paths) or a
slow-path ``CALL`` (IEEE division and square root outside their fast
ranges).  The few instructions of the other common branches (inside,
``sq = 0``) are counted too.  The kernels issue at most 4 warp instructions
per clock per multiprocessor, so where nothing else bounds them their pairs
per clock per multiprocessor are at most 128 / ``sass/pair``; unlike the
PTX count, this is the code the GPU runs (ptxas removes, adds and schedules
instructions).  Not for float64 kernels: their common path has the same
instructions as the band's.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"

import numba.cuda.dispatcher as dispatcher  # noqa: E402
from numba import cuda, float32, float64, int64  # noqa: E402

dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))

from cdfts_dask.engine import cuda_kernels  # noqa: E402


def ptxas() -> str:
    """The ptxas of the pip package nvidia-cuda-nvcc-cu12, else the one on PATH."""
    try:
        import nvidia.cuda_nvcc

        candidate = Path(list(nvidia.cuda_nvcc.__path__)[0]) / "bin" / "ptxas"
        if candidate.exists():
            return str(candidate)
    except ImportError:
        pass
    found = shutil.which("ptxas")
    if not found:
        sys.exit("cuda_ptx_check: no ptxas (pip install nvidia-cuda-nvcc-cu12)")
    return found


def nvdisasm() -> str | None:
    """The nvdisasm of the pip package nvidia-cuda-nvdisasm, else the one on PATH, else None."""
    try:
        import nvidia

        for root in nvidia.__path__:
            for candidate in sorted(Path(root).glob("*/bin/nvdisasm")):
                return str(candidate)
    except ImportError:
        pass
    return shutil.which("nvdisasm")


def assemble(ptx: str, tool: str, disassembler: str | None = None) -> tuple[str, str]:
    """``registers R, smem S bytes`` of the PTX's kernel for sm_90 (RuntimeError with ptxas's error), and
    its SASS as nvdisasm prints it ("" without a disassembler)."""
    with tempfile.TemporaryDirectory() as tmp:
        source, cubin = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        source.write_text(ptx)
        res = subprocess.run(
            [tool, "-arch=sm_90", "-v", str(source), "-o", str(cubin)], capture_output=True, text=True
        )
        sass = ""
        if disassembler and not res.returncode:
            sass = subprocess.run([disassembler, str(cubin)], capture_output=True, text=True).stdout
    if res.returncode:
        lines = res.stderr.strip().splitlines()
        error = next((line for line in lines if "error" in line), lines[-1])
        raise RuntimeError(re.sub(r"Entry function '[^']*'", "the kernel", error))
    regs = re.search(r"Used (\d+) registers", res.stderr)
    smem = re.search(r"(\d+) bytes smem", res.stderr)
    return f"registers {regs[1] if regs else '?'}, smem {smem[1] if smem else 0} bytes", sass


_SASS_LINE = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;")
_SASS_BRANCH = re.compile(r"^(@!?U?P\w+\s+)?BRA\s+(?:!?U?P\w+,\s*)?`\((\.L_x_\d+)\)")
_SASS_RARE = re.compile(r"\b(DMUL|DSETP|MUFU\.\w+64H|CALL)\b")


def sass_pair_path(sass: str) -> int:
    """Instructions on the common path of one pass of the per-pair loop (see the module docstring): the
    largest back edge with no ``BAR`` in its range is the loop."""
    ins, labels, pending = [], {}, []
    for line in sass.splitlines():
        label = re.match(r"^(\.L_x_\d+):", line.strip())
        if label:
            pending.append(label[1])
        elif found := _SASS_LINE.match(line):
            for name in pending:
                labels[name] = len(ins)
            pending = []
            ins.append(found[2])
    target = [labels.get(m[2]) if (m := _SASS_BRANCH.match(x)) else None for x in ins]
    loops = [(i - t, t, i) for i, t in enumerate(target)
             if t is not None and t < i and not any("BAR" in x for x in ins[t:i])]
    if not loops:
        return 0
    _, head, tail = max(loops)
    starts = {head} | {i + 1 for i in range(head, tail + 1) if target[i] is not None or "CALL" in ins[i]}
    starts |= {target[i] for i in range(head, tail + 1) if target[i] is not None}
    starts = sorted(s for s in starts if head <= s <= tail)
    ends = dict(zip(starts, [*starts[1:], tail + 1], strict=True))
    seen, stack, count = set(), [head], 0
    while stack:
        start = stack.pop()
        if start in seen or start not in ends:
            continue
        seen.add(start)
        block = range(start, ends[start])
        if any(_SASS_RARE.search(ins[i]) for i in block):
            continue
        count += len(block)
        last = block[-1]
        if target[last] is None:
            stack.append(last + 1)
            continue
        if target[last] > last:  # a forward branch; the back edge ends the pass
            stack.append(target[last])
        if _SASS_BRANCH.match(ins[last])[1] or "," in ins[last]:  # predicated: it may fall through
            stack.append(last + 1)
    return count


def hot_loop(ptx: str, rare: str | None) -> dict[str, int]:
    """Instruction counts of the per-pair loop: the largest back-edge range without ``bar.sync``, less
    its basic blocks that contain ``rare``."""
    lines = [line.strip() for line in ptx.splitlines()]
    labels = {line[:-1]: i for i, line in enumerate(lines) if line.startswith("$L") and line.endswith(":")}
    loops = []
    for i, line in enumerate(lines):
        target = re.search(r"\bbra(?:\.uni)?\s+(\$L\w+);", line)
        if target and labels.get(target[1], i) < i:
            lo = labels[target[1]]
            if not any("bar.sync" in body for body in lines[lo:i]):
                loops.append((i - lo, lo, i))
    if not loops:
        return {}
    _, lo, hi = max(loops)
    blocks, block = [], []
    for line in lines[lo : hi + 1]:
        if line.endswith(":") and block:
            blocks.append(block)
            block = []
        block.append(line)
        if re.search(r"\bbra\b", line):
            blocks.append(block)
            block = []
    blocks.append(block)
    hot = [ins for b in blocks if not (rare and any(rare in ins for ins in b)) for ins in b]
    ops = [ins.split()[0].lstrip("@%p0123456789 ") for ins in hot if ins and not ins.endswith(":")]
    return {
        "cvt": sum(op.startswith("cvt.f64.f32") for op in ops),
        "f64": sum(op.endswith(".f64") and not op.startswith(("ld", "st", "mov", "cvt")) for op in ops),
        "f32": sum(op.endswith(".f32") and not op.startswith(("ld", "st", "mov", "cvt")) for op in ops),
        "all": len(ops),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="4,8,64", help="comma-separated d")
    dims = [int(v) for v in p.parse_args().dims.split(",")]
    tool, disassembler, failed = ptxas(), nvdisasm(), 0
    if disassembler is None:
        print("cuda_ptx_check: no nvdisasm, no SASS counts (pip install nvidia-cuda-nvdisasm)")
    for d in dims:
        for dtype, wt in (("float64", float64), ("float32", float32)):
            X = wt[:, ::1]
            signatures = {
                "max_sq": (X, int64, int64, float64[::1]),
                "count_rows": (X, int64, int64, float64, wt, wt, int64[::1]),
                "sq_rows": (X, int64, int64, float64[:, ::1]),
                "shift_sums": (X, X, float64[::1], *[wt[::1]] * 5, float64[::1], float64[::1], float64,
                               float64[::1], float64[:, ::1]),
            }
            signatures["kth_smallest_sq"] = (X, int64, int64, float64[::1])  # k = 10
            built = (*cuda_kernels.kernels(d, dtype, 128), cuda_kernels.kth_kernel(d, 11, dtype, 128))
            for kernel, (name, sig) in zip(built, signatures.items(), strict=True):
                ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))
                ops = ("mul.rn.f64", "fma.rn.f64", "fma.rn.f32", "sqrt.rn", "div.rn", "cvt.f64.f32")
                counts = " ".join(f"{op} {ptx.count(op)}" for op in ops)
                loop = hot_loop(ptx, "mul.rn.f64" if dtype == "float32" else None)
                counts += " | loop: " + " ".join(f"{key} {value}" for key, value in loop.items())
                try:
                    used, sass = assemble(ptx, tool, disassembler)
                except RuntimeError as error:
                    (used, sass), failed = (f"ptxas FAILED: {error}", ""), failed + 1
                if sass and dtype == "float32" and name != "sq_rows":  # sq_rows has no per-pair loop
                    counts += f" sass/pair {sass_pair_path(sass)}"
                print(f"{dtype:8s} {name:15s} d={d:<3d} {counts} | {used}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
