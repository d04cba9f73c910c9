#!/bin/bash
# H200 call 4 (twelfth session): the adapter's float64 rates; straight alpha without the plain colour
# (main against this tree); fewer workgroups an SM (smemhog); the chain again
cd "$(dirname "$0")/.."
T0=$(date +%s)
for t in . build/base; do (cd $t && python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"); done
echo "== rates $(($(date +%s)-T0)) s"
timeout 100 python3 benchmarks/f64_rate.py > $OUT/rates.txt 2>&1; echo "rc=$?" >> $OUT/rates.txt; cat $OUT/rates.txt
echo "== variants $(($(date +%s)-T0)) s"
timeout 200 python3 benchmarks/mip_kernel_variants.py --sizes 4096 8192 --repeat 7 --variants base smemhog nopl base smemhog nopl > $OUT/variants.txt 2>&1; echo "rc=$?" >> $OUT/variants.txt
(cd build/base && timeout 100 python3 benchmarks/mip_kernel_variants.py --sizes 4096 8192 --repeat 7 --alpha straight --variants base base) > $OUT/straight-main.txt 2>&1; echo "rc=$?" >> $OUT/straight-main.txt
timeout 100 python3 benchmarks/mip_kernel_variants.py --sizes 4096 8192 --repeat 7 --alpha straight --variants base base > $OUT/straight-new.txt 2>&1; echo "rc=$?" >> $OUT/straight-new.txt
for f in variants straight-main straight-new; do echo "-- $f"; cut -c1-200 $OUT/$f.txt; done
echo "== chain $(($(date +%s)-T0)) s"
timeout 150 python3 benchmarks/mips_kernels.py --sizes 4096 8192 4095x4097 --repeat 5 > $OUT/kernels-new.txt 2>&1; echo "rc=$?" >> $OUT/kernels-new.txt
grep -vE "^$" $OUT/kernels-new.txt | cut -c1-200
echo "== done $(($(date +%s)-T0)) s"
