#!/bin/bash
# H200 call 1 (twelfth session): the float64 kernel chain, planes (SOA) and the tile's taps in workgroup memory
# against main, and probes of where its passes' time goes
cd "$(dirname "$0")/.."
T0=$(date +%s)
for t in . build/base; do (cd $t && python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"); done
echo "== variants $(($(date +%s)-T0)) s"
timeout 200 python3 benchmarks/mip_kernel_variants.py --sizes 4096 8192 --repeat 7 --variants base aos 2d nofinish noencode nonext nox noy nopow notab base > $OUT/variants.txt 2>&1; echo "rc=$?" >> $OUT/variants.txt
cat $OUT/variants.txt | cut -c1-200
echo "== main $(($(date +%s)-T0)) s"
(cd build/base && timeout 150 python3 benchmarks/mips_kernels.py --sizes 4096 8192 4095x4097 --repeat 5) > $OUT/kernels-main.txt 2>&1; echo "rc=$?" >> $OUT/kernels-main.txt
grep -vE "^$" $OUT/kernels-main.txt | cut -c1-200
echo "== new $(($(date +%s)-T0)) s"
timeout 150 python3 benchmarks/mips_kernels.py --sizes 4096 8192 4095x4097 --repeat 5 > $OUT/kernels-new.txt 2>&1; echo "rc=$?" >> $OUT/kernels-new.txt
grep -vE "^$" $OUT/kernels-new.txt | cut -c1-200
echo "== done $(($(date +%s)-T0)) s"
