#!/bin/bash
# Builds and runs pieces_check.cpp: the kernels of kernels/ray_joseph.cu on the CPU, against a
# reference copy of them from git (default: HEAD; `run.sh <rev>` for another).
# Needs g++ 12 or later (C++20 <barrier>).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
rev=${1:-HEAD}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
prep() { sed -e 's/extern "C"//' -e 's/extern __shared__ float slab_smem\[\];/float* slab_smem = (float*)cpu_dynamic_smem();/'; }
prep <"$root/kernels/ray_joseph.cu" >"$out/k_cur.cu"
prep <"$here/../lanes_variants.cu" >"$out/lanes_variants_cur.cu"
if git -C "$root" show "$rev:kernels/ray_joseph.cu" >"$out/ref.cu" 2>/dev/null; then
    prep <"$out/ref.cu" >"$out/k_ref.cu"
else
    echo "no $rev in git here: the reference is the working copy itself"
    cp "$out/k_cur.cu" "$out/k_ref.cu"
fi
command -v g++ >/dev/null || { echo "g++ (12 or later) is needed to build the CPU stand-in" >&2; exit 2; }
flags=""
grep -q "int lo0;" "$out/k_ref.cu" && flags="-DREF_HAS_LO0"
grep -q "int lo\[3\];" "$out/k_ref.cu" && flags="-DREF_HAS_LO3"
# A reference whose one-entry 2D lanes transpose forms w*y itself (takes the sinogram and weights).
grep -q "joseph_backward2_lanes_f32(const float\* __restrict__ sino, const float\* __restrict__ weights" "$out/k_ref.cu" &&
    flags="$flags -DREF_LANES_FUSED"
g++ -std=c++20 -O1 -ffp-contract=off -pthread $flags -I"$here" -I"$here/.." -I"$out" "$here/pieces_check.cpp" -o "$out/pieces_check"
"$out/pieces_check"
