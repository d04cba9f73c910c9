#!/bin/bash
# H200 call 5 (twelfth session): the float64 kernel chains' bytes, main against this tree (543 chains each:
# 7 sizes, 5 formats, kaiser/lanczos/triangle, 3 wraps, 2 alpha modes), and the kernel tests
cd "$(dirname "$0")/.."
T0=$(date +%s)
for t in . build/base; do (cd $t && python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"); done
(cd build/base && timeout 200 python3 ../khash.py $OUT/kh-h200-main.json > $OUT/kh-main.log 2>&1) &
timeout 200 python3 benchmarks/mip_kernel_hashes.py --json $OUT/kh-h200-new.json > $OUT/kh-new.log 2>&1
wait
echo "== hashes $(($(date +%s)-T0)) s"; tail -2 $OUT/kh-main.log $OUT/kh-new.log
timeout 250 python3 -m pytest -q -n 8 -p no:cacheprovider tests/mips/test_kernel_taps.py tests/mips/test_mips.py -k "kernel or kaiser or lanczos or triangle" > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
tail -4 $OUT/tests.txt
echo "== done $(($(date +%s)-T0)) s"
