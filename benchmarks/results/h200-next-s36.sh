#!/bin/bash
# Prepared in the twelfth session for the next H200 call (not yet run). From /work/main:
#   cp benchmarks/results/h200-next-s36.sh build/next.sh
#   run: carry [".gpu", "build/next.sh"], command `source .gpu/enter.sh && bash build/next.sh` (~4 min with the start)
# 1. the separable float64 shader's form for 32 KB devices (taps read from storage buffers), never timed on a GPU,
#    against the form the H200 takes (taps in workgroup memory), two rounds; and the chain as the H200 runs it
# 2. the box chain at the session's end (nothing changed there: a regression check), recorded
cd "$(dirname "$0")/.."
T0=$(date +%s)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
timeout 200 python3 benchmarks/mip_kernel_variants.py --sizes 4096 8192 --repeat 7 --variants base global aos base global aos > $OUT/variants.txt 2>&1; echo "rc=$?" >> $OUT/variants.txt
cut -c1-200 $OUT/variants.txt
echo "== kernels $(($(date +%s)-T0)) s"
timeout 150 python3 benchmarks/mips_kernels.py --sizes 4096 8192 4095x4097 --repeat 5 > $OUT/kernels.txt 2>&1; echo "rc=$?" >> $OUT/kernels.txt
grep -vE "^$" $OUT/kernels.txt | cut -c1-200
echo "== box $(($(date +%s)-T0)) s"
timeout 150 python3 benchmarks/mips.py --sizes 4096 8192 8191 4095x4097 --skip-cpu --precisions exact --repeat 9 --record > $OUT/mips.txt 2>&1; echo "rc=$?" >> $OUT/mips.txt
tail -n 20 $OUT/mips.txt | cut -c1-200
cp benchmarks/results/mips.jsonl $OUT/ 2>/dev/null
echo "== done $(($(date +%s)-T0)) s"
