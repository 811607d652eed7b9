#!/usr/bin/env bash
# Export kernel candidates for the `ab` stage of gpu_figures.sh, in the repository root:
#
#     bash docs/scripts/gpu_ab_kit.sh [CANDIDATE ...]   # default: every docs/candidates/*.series
#
# A candidate is a series (NAME.series: the names of patch files beside it, one per line, applied in
# that order; a variant is one more small patch on top of the one it varies) or a git revision.  Each
# candidate's package goes to $KIT/ab/NAME/cdfts_dask (KIT default .gpu-kit; NAME is the series' name, or
# the revision less "cand/"): a series applied, whole (tests too, in a scratch copy), to the committed
# tree (BASE, default HEAD: any commit, e.g. `git stash create`'s of the working tree); a revision as
# committed (`git archive`).  Nothing of the working tree goes in.  The ab
# folder is emptied first, so the stage times exactly these candidates (in NAME order), between two runs
# of this tree.  Carry the kit to the GPU host with it (the device tool's `carry`).
#
# Candidates live as patches in docs/candidates/ because only main lands: a branch does not outlive the
# session that made it, a committed patch does (tests/test_project.py checks that every series still
# applies).
set -euo pipefail

kit=${KIT:-.gpu-kit}
base=${BASE:-HEAD}
candidates=("$@")
if [ ${#candidates[@]} -eq 0 ]; then
    shopt -s nullglob
    candidates=(docs/candidates/*.series)
    shopt -u nullglob
fi
if [ ${#candidates[@]} -eq 0 ]; then
    echo "gpu_ab_kit: no candidate given and no series under docs/candidates/" >&2
    exit 1
fi
rm -rf "$kit/ab"
for candidate in "${candidates[@]}"; do
    if [[ $candidate == *.series ]]; then
        name=$(basename "$candidate" .series)
        folder=$(dirname "$(realpath "$candidate")")
        scratch=$(mktemp -d)
        git archive "$base" | tar -x -C "$scratch"
        while read -r patch; do
            [ -n "$patch" ] || continue
            if ! (cd "$scratch" && git apply "$folder/$patch"); then
                rm -rf "$scratch"
                echo "gpu_ab_kit: $candidate: $patch does not apply to $base ($(git rev-parse --short "$base")) and what it follows; rebase it" >&2
                exit 1
            fi
        done < "$candidate"
        mkdir -p "$kit/ab/$name"
        cp -r "$scratch/cdfts_dask" "$kit/ab/$name/"
        rm -rf "$scratch"
        echo "$kit/ab/$name: $(paste -sd+ "$candidate") on $(git rev-parse --short "$base")"
    else
        name=${candidate#cand/}
        name=${name//\//-}
        mkdir -p "$kit/ab/$name"
        git archive "$candidate" cdfts_dask | tar -x -C "$kit/ab/$name"
        echo "$kit/ab/$name: $(git rev-parse --short "$candidate") $(git log -1 --format=%s "$candidate" | cut -c1-80)"
    fi
done
