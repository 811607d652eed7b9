#!/usr/bin/env bash
# Export kernel candidates for the `ab` stage of gpu_figures.sh, in the repository root:
#
#     bash docs/scripts/gpu_ab_kit.sh [REV ...]     # default: every local branch under cand/
#
# Each revision's package goes to $KIT/ab/NAME/cdfts_dask (KIT default .gpu-kit; NAME is the branch name
# less "cand/", or the revision as given), from `git archive`: what is committed, nothing of the working
# tree.  The ab folder is emptied first, so the stage times exactly these revisions (in NAME order),
# between two runs of this tree.  Carry the kit to the GPU host with it (the device tool's `carry`).
set -euo pipefail

kit=${KIT:-.gpu-kit}
revisions=("$@")
if [ ${#revisions[@]} -eq 0 ]; then
    mapfile -t revisions < <(git for-each-ref --format='%(refname:short)' refs/heads/cand/)
fi
if [ ${#revisions[@]} -eq 0 ]; then
    echo "gpu_ab_kit: no revision given and no branch under cand/" >&2
    exit 1
fi
rm -rf "$kit/ab"
for rev in "${revisions[@]}"; do
    name=${rev#cand/}
    name=${name//\//-}
    mkdir -p "$kit/ab/$name"
    git archive "$rev" cdfts_dask | tar -x -C "$kit/ab/$name"
    echo "$kit/ab/$name: $(git rev-parse --short "$rev") $(git log -1 --format=%s "$rev" | cut -c1-80)"
done
