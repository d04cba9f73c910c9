#!/bin/bash
# H200 call 3 (twelfth session): tap loops of constant length, level 1's staging loop of constant length
cd "$(dirname "$0")/.."
T0=$(date +%s)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
echo "== variants $(($(date +%s)-T0)) s"
timeout 300 python3 benchmarks/mip_kernel_variants.py --sizes 4096 8192 --repeat 7 --variants base kfix stagefix fix f32all f32fix base kfix stagefix fix > $OUT/variants.txt 2>&1; echo "rc=$?" >> $OUT/variants.txt
cat $OUT/variants.txt | cut -c1-200
echo "== done $(($(date +%s)-T0)) s"
