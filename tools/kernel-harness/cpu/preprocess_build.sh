#!/bin/bash
# Builds preprocess_check.cpp (the kernels of kernels/preprocess.cu on the CPU stand-in) into
# the folder $1 as $1/preprocess_check, for tests/kernels_on_cpu.rs. Needs g++ 12 or later.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$1
command -v g++ >/dev/null || { echo "g++ (12 or later) is needed to build the CPU stand-in" >&2; exit 2; }
sed -e 's/extern "C"//' <"$root/kernels/preprocess.cu" >"$out/preprocess_cur.cu"
g++ -std=c++20 -O1 -ffp-contract=off -pthread -I"$here" -I"$out" "$here/preprocess_check.cpp" -o "$out/preprocess_check"
