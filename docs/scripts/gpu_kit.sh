#!/usr/bin/env bash
# Pack what a GPU host without a package index needs to run cdfts-dask's GPU tests and benchmarks.
#
# Run here, in the repository root, on a machine where pip can reach PyPI:
#
#     bash docs/scripts/gpu_kit.sh            # fills .gpu-kit/ (ignored by git)
#
# then copy the checkout with .gpu-kit/ to the GPU host and run docs/scripts/gpu_figures.sh there.
#
# The host is assumed to hold the GPU stack and the scientific basics already (Python 3.12, NumPy,
# numba, numba-cuda, CuPy, cuda-core, nvidia-ml-py, scikit-learn, pandas, pytest, hypothesis, tqdm,
# filelock, msgpack, cloudpickle, toolz, psutil, sortedcontainers, pyyaml, jinja2, click, fsspec, pybind11),
# as the CUDA images of the big ML frameworks do.  The kit adds what such images lack:
#
# * Dask and dask-cuda, at the versions dask-cuda pins (rapids-dask-dependency 26.10 pins
#   dask/distributed 2026.7.1), with distributed's pure-Python needs;
# * Zarr 3 and its codecs (the checkpoints);
# * NumPy 2.4: numba-cuda 0.30.4 (the last release; the project is in maintenance mode) cannot
#   compile a kernel under NumPy 2.5, which removed np.row_stack (NVIDIA/numba-cuda#907), and the
#   CUDA 13 images ship NumPy 2.5; the kit's NumPy goes first on the host's path;
# * pykeops and keopscore (the peer in docs/scripts/keops_peer_bench.py; built here as wheels, they
#   ship as sources only), and the peer's own file from ../shared/peers/.
#
# Environment: KIT (default .gpu-kit), PYTHON_VERSION (default 3.12), PEER (default
# ../shared/peers/keops_cdfts.py).
set -euo pipefail

kit=${KIT:-.gpu-kit}
py=${PYTHON_VERSION:-3.12}
peer=${PEER:-../shared/peers/keops_cdfts.py}

# binary wheels for the host's CPython, any manylinux the host's glibc takes
binary=(
    "dask==2026.7.1" "distributed==2026.7.1" "dask-cuda==26.10.0" "rapids-dask-dependency==26.10.0"
    "tornado==6.6.1" "tblib==3.2.2" "zict==3.0.0" "partd==1.4.2" "locket==1.0.0"
    "zarr==3.1.6" "numcodecs==0.17.1" "donfig==0.8.1.post1" "google-crc32c==1.9.0"
    "numpy==2.4.6"
)
# source-only on PyPI: built into (pure-Python) wheels here
from_source=("pykeops==2.3" "keopscore==2.3")

rm -rf "$kit.partial"
mkdir -p "$kit.partial/wheels"
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
    manylinux2014_x86_64 manylinux1_x86_64 manylinux_2_5_x86_64; do
    platforms+=(--platform "$p")
done
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
    "${platforms[@]}" -d "$kit.partial/wheels" "${binary[@]}"
python3 -m pip wheel --quiet --no-deps -w "$kit.partial/wheels" "${from_source[@]}"
if [ -f "$peer" ]; then
    cp "$peer" "$kit.partial/keops_cdfts.py"
else
    echo "gpu_kit: no peer at $peer: the KeOps comparison will be skipped on the host" >&2
fi
# complete: replace the old kit only now
rm -rf "$kit"
mv "$kit.partial" "$kit"
ls "$kit/wheels"
du -sh "$kit"
