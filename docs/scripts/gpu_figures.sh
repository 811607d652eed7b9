#!/usr/bin/env bash
# Take the GPU figures of docs/BENCHMARKS.md on a CUDA host, in the repository root:
#
#     bash docs/scripts/gpu_figures.sh [STAGE ...]      # stages: env tests kernels ab bench knn peer (default: all but ab)
#
# * env   : nvidia-smi, the Python and package versions, what the CUDA device sees;
# * tests : the real-GPU tests (`pytest -m gpu tests/test_engine_cuda.py`);
# * kernels: each CUDA kernel alone at n = 2e5, d = 8 (docs/scripts/cuda_kernel_profile.py);
# * ab    : the same profile for this tree, then for each revision exported under $KIT/ab/NAME/cdfts_dask
#           (docs/scripts/gpu_ab_kit.sh [CANDIDATE ...]: every docs/candidates/*.series by default), then this tree
#           again: kernel changes timed against each other on one card, in one call, each with its
#           diameter's sq and the digest of its shift sums' bits (the same line: the same bits as this
#           tree's); the revisions need the kernel signatures the profile script calls (f4176b5 and later).
#           With AB_SIZES set (say 1e6), each also runs one float32 iteration of `cdfts bench --gpu` at those
#           sizes, d = 8, one GPU: the target's own figure for every revision, in the same call;
# * bench : `cdfts bench --gpu` at n = 1e5 and 1e6, d = 8, float64 and float32, on one GPU, then on
#           every visible GPU where there are several;
# * knn   : the same one-GPU bench with the k-NN estimator, k = 10 (the sorted-buffer k-th radius kernel);
# * peer  : KeOps (../shared/peers/keops_cdfts.py, or the kit's copy) beside the engine on the GPU,
#           same points, one process (docs/scripts/keops_peer_bench.py --device cuda).
#
# Each stage writes its log under $OUT (default ./gpu-figures) and keeps going after a failing stage;
# the exit status is the number of failed stages.  Each command of a stage runs under a time limit (env
# 60 s per command, tests 300 s, kernels 150 s, bench and knn 300 s per run, peer 300 s per dtype; STAGE_LIMIT_S,
# whole seconds, sets one for all): a hung command fails its stage alone and leaves time for the others
# on a lent machine whose own command has a wall-clock limit (give that limit room for every stage run).  Where the host cannot reach a package index, run
# docs/scripts/gpu_kit.sh on a machine that can and bring .gpu-kit/ along: its wheels are installed
# into $SITE first (nothing is installed into the host's own environment).
#
# Environment: OUT, KIT (default .gpu-kit), SITE (where the kit goes, default /tmp/site), PYTHON
# (default python3), SIZES (default 1e5,1e6), PEER_SIZES (default 20000,100000), AB_SIZES (default none), STAGE_LIMIT_S.
set -uo pipefail

out=${OUT:-gpu-figures}
kit=${KIT:-.gpu-kit}
site=${SITE:-/tmp/site}
python=${PYTHON:-python3}
sizes=${SIZES:-1e5,1e6}
ab_sizes=${AB_SIZES:-}
peer_sizes=${PEER_SIZES:-20000,100000}
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(env tests kernels bench knn peer)
if [[ -n ${STAGE_LIMIT_S:-} && ! ${STAGE_LIMIT_S} =~ ^[1-9][0-9]*$ ]]; then
    echo "gpu_figures: STAGE_LIMIT_S must be a whole number of seconds, got '$STAGE_LIMIT_S'" >&2
    exit 98
fi
mkdir -p "$out"
# the real device, never numba's CUDA simulator (tests/conftest.py picks it only where /dev/nvidiactl is missing)
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" NUMBA_ENABLE_CUDASIM=0
# KeOps builds (and caches, under ~/.cache/keops*) its CUDA JIT engine with $CXX, by default the first g++ on
# PATH.  On the lent H200 image (2026-11-27) that is a wrapper in /opt/gcc, and the engine it built segfaulted
# inside libstdc++ (std::ostream, in KeOps' nvrtc Compile) on the first reduction; built by the system g++ it
# works.  So the system g++ where there is one and CXX is unset, for every stage (env imports pykeops first).
# A cache built earlier by another compiler is reused: clear it (python -c "import pykeops; pykeops.clean_pykeops()").
if [ -z "${CXX:-}" ] && [ -x /usr/bin/g++ ]; then
    export CXX=/usr/bin/g++
fi

if [ -d "$kit/wheels" ] && [ ! -f "$site/.cdfts-kit" ]; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" "$kit"/wheels/*.whl || { echo "gpu_figures: installing $kit failed" >&2; exit 99; }
    touch "$site/.cdfts-kit"
fi
[ -d "$site" ] && export PYTHONPATH="$PYTHONPATH:$site"

gpus=$(nvidia-smi --list-gpus 2>/dev/null | wc -l)
peer_file=../shared/peers/keops_cdfts.py
[ -f "$peer_file" ] || peer_file="$kit/keops_cdfts.py"

# limited SECONDS COMMAND...: COMMAND, stopped (and reported) after SECONDS (STAGE_LIMIT_S if set)
limited() {
    local seconds=${STAGE_LIMIT_S:-$1} start=$SECONDS
    shift
    timeout --kill-after=10 "$seconds" "$@"
    local status=$?
    if [ "$status" -eq 124 ] || { [ "$status" -eq 137 ] && [ $((SECONDS - start)) -ge "$seconds" ]; }; then
        echo "gpu_figures: stopped after its limit of $seconds s: $*" >&2
    elif [ "$status" -eq 137 ]; then
        echo "gpu_figures: killed (SIGKILL: out of memory?) after $((SECONDS - start)) s: $*" >&2
    fi
    return "$status"
}

stage_env() {
    limited 60 nvidia-smi
    limited 60 "$python" - <<'EOF'
import importlib, platform
print("python", platform.python_version())
for name in ["numpy", "numba", "numba_cuda", "cupy", "dask", "distributed", "dask_cuda", "zarr", "pykeops"]:
    try:
        print(f"{name:12s}", getattr(importlib.import_module(name), "__version__", "?"))
    except Exception as error:  # noqa: BLE001 - report every missing piece, then go on
        print(f"{name:12s} missing: {error}")
try:
    from numba import cuda

    print("numba.cuda sees", [g.name for g in cuda.gpus], "available", cuda.is_available())
except Exception as error:  # noqa: BLE001
    print("numba.cuda sees no GPU:", error)
EOF
}

stage_tests() {
    # -rs names every skipped test: a skip here means the GPU was not used, which fails the stage
    limited 300 "$python" -m pytest -q -rs -p no:cacheprovider -m gpu tests/test_engine_cuda.py | tee /tmp/gpu_tests.$$
    local status=${PIPESTATUS[0]}
    if grep -q "skipped" /tmp/gpu_tests.$$; then
        echo "gpu_figures: GPU tests were skipped: this was not a real-GPU run" >&2
        status=1
    fi
    rm -f /tmp/gpu_tests.$$
    return "$status"
}

# profile_kernels: each CUDA kernel alone at n = 2e5, d = 8, both dtypes, with the package first on PYTHONPATH
profile_kernels() {
    limited 150 "$python" docs/scripts/cuda_kernel_profile.py --n 2e5 -d 8 --dtype float64,float32
}

# bench_run SIZES DTYPES REPEAT WORKERS [OPTION...]: one `cdfts bench --gpu` run, d = 8, on WORKERS GPUs
bench_run() {
    limited 300 "$python" -m cdfts_dask bench --gpu --sizes "$1" -d 8 --dtype "$2" --workers "$4" \
        "${@:5}" --oracle-max 0 --repeat "$3"
}

# bench WORKERS [OPTION...]: the bench stage's run, at $sizes, both dtypes, best of 2
bench() {
    bench_run "$sizes" float64,float32 2 "$@"
}

stage_kernels() {
    profile_kernels
}

stage_ab() {
    local status=0 root
    local revisions=("$kit"/ab/*/cdfts_dask)
    if [ ! -d "${revisions[0]}" ]; then
        echo "gpu_figures: no revision to compare under $kit/ab (export them: bash docs/scripts/gpu_ab_kit.sh)" >&2
        return 1
    fi
    for root in "$PWD" "${revisions[@]%/cdfts_dask}" "$PWD"; do
        if [ "$root" = "$PWD" ]; then echo "-- this tree"; else echo "-- ${root#"$PWD"/}"; fi
        PYTHONPATH="$root:$PYTHONPATH" profile_kernels || status=1
        if [ -n "$ab_sizes" ]; then
            PYTHONPATH="$root:$PYTHONPATH" bench_run "$ab_sizes" float32 1 1 || status=1
        fi
    done
    return $status
}

stage_bench() {
    local status=0
    bench 1 || status=1
    if [ "$gpus" -gt 1 ]; then
        bench "1,$gpus" || status=1
    fi
    return $status
}

stage_knn() {
    bench 1 --estimator knn -k 10
}

stage_peer() {
    local status=0
    for dtype in float64 float32; do
        limited 300 "$python" docs/scripts/keops_peer_bench.py --device cuda --workers 1 --sizes "$peer_sizes" -d 8 \
            --dtype "$dtype" --repeat 2 --check-max 20000 --peer "$peer_file" || status=1
    done
    return $status
}

failed=0
for stage in "${stages[@]}"; do
    echo "== $stage ($(date -u +%H:%M:%S))"
    start=$SECONDS
    "stage_$stage" 2>&1 | tee "$out/$stage.log"
    status=${PIPESTATUS[0]}
    echo "== $stage: exit $status, $((SECONDS - start)) s" | tee -a "$out/$stage.log"
    [ "$status" -eq 0 ] || failed=$((failed + 1))
done
exit $failed
