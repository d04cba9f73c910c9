#!/bin/bash
# H200 call 1 of the thirteenth session. From /work/main: carry [".gpu", "build/next.sh", "build/base"],
# command `source .gpu/enter.sh && bash build/next.sh`. build/base = 16dcb19 (the session's start), the tree
# of the float32 kernel change uncommitted at the time.
cd "$(dirname "$0")/.."
T0=$(date +%s)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
(cd build/base && python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error")
echo "== f32 kernels, new $(($(date +%s)-T0)) s"
timeout 150 python3 benchmarks/mips_kernels.py --sizes 4096 8192 4095x4097 --with-float32 --repeat 5 > $OUT/kernels-new.txt 2>&1; echo "rc=$?" >> $OUT/kernels-new.txt
echo "== f32 kernels, base $(($(date +%s)-T0)) s"
(cd build/base && timeout 120 python3 benchmarks/mips_kernels.py --sizes 4096 8192 4095x4097 --with-float32 --repeat 5 > $OUT/kernels-base.txt 2>&1; echo "rc=$?" >> $OUT/kernels-base.txt)
echo "== tests $(($(date +%s)-T0)) s"
timeout 90 python3 -m pytest -q -n 8 tests/mips/test_float32_kernels.py tests/transform/test_transform.py -k "kernel or float32 or tile" > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
echo "== float64 sep forms $(($(date +%s)-T0)) s"
timeout 110 python3 benchmarks/mip_kernel_variants.py --sizes 4096 8192 --repeat 5 --variants base global base global > $OUT/variants.txt 2>&1; echo "rc=$?" >> $OUT/variants.txt
echo "== box $(($(date +%s)-T0)) s"
timeout 120 python3 benchmarks/mips.py --sizes 4096 8192 8191 4095x4097 --skip-cpu --precisions exact --repeat 9 --record > $OUT/mips.txt 2>&1; echo "rc=$?" >> $OUT/mips.txt
cp benchmarks/results/mips.jsonl $OUT/ 2>/dev/null
