#!/bin/bash
# H200 call 2 (twelfth session): probes of the float64 kernel chain, timed warm (two rounds), and the chain
cd "$(dirname "$0")/.."
T0=$(date +%s)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
echo "== variants $(($(date +%s)-T0)) s"
timeout 300 python3 benchmarks/mip_kernel_variants.py --sizes 4096 8192 --repeat 7 --variants base aos f32all nofinish noencode nodiv nonext nox noy notab base aos f32all nofinish noencode nodiv nonext nox noy > $OUT/variants.txt 2>&1; echo "rc=$?" >> $OUT/variants.txt
cat $OUT/variants.txt | cut -c1-200
echo "== new $(($(date +%s)-T0)) s"
timeout 150 python3 benchmarks/mips_kernels.py --sizes 4096 8192 4095x4097 --repeat 5 > $OUT/kernels-new.txt 2>&1; echo "rc=$?" >> $OUT/kernels-new.txt
grep -vE "^$" $OUT/kernels-new.txt | cut -c1-200
echo "== done $(($(date +%s)-T0)) s"
