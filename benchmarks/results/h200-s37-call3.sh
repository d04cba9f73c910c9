#!/bin/bash
# H200 call 3 of the fourteenth session: the footprints' chunk size (EXACT_LOOP_LIMIT) of the float64 and float-float box chains
cd "$(dirname "$0")/.."
T0=$(date +%s)
export GPUTEX_COMMIT=$(cat build/commit.txt)
for L in 1024 256 64 1024; do
  timeout 100 python3 benchmarks/mips_float.py --sizes 4095x4097 4096 --formats rgba32float --repeat 5 --loop-limit $L > $OUT/limit-$L.txt 2>&1; echo "rc=$?" >> $OUT/limit-$L.txt
  grep -E "LIMIT|^[0-9]|GPU|rc=" $OUT/limit-$L.txt | cut -c1-150
done
echo "== done $(($(date +%s)-T0)) s"
