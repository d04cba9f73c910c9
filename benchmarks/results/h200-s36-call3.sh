#!/bin/bash
# H200 call 3 of the thirteenth session: the float32 chain with its work textures kept between chains
cd "$(dirname "$0")/.."
T0=$(date +%s)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
timeout 200 python3 benchmarks/mips_kernels.py --sizes 4096 8192 --filters kaiser --with-float32 --repeat 7 > $OUT/kernels-f32.txt 2>&1; echo "rc=$?" >> $OUT/kernels-f32.txt
grep -vE "^$" $OUT/kernels-f32.txt | cut -c1-220
echo "== done $(($(date +%s)-T0)) s"
