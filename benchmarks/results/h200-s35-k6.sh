#!/bin/bash
# H200 call 6 (twelfth session): ties to the even code: the float64 kernel chains' bytes against lavapipe's, the kernel tests
cd "$(dirname "$0")/.."
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
timeout 120 python3 benchmarks/mip_kernel_hashes.py --json $OUT/kh-h200-tie.json > $OUT/kh.log 2>&1; tail -n 2 $OUT/kh.log
timeout 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/mips/test_kernel_taps.py tests/mips/test_mips.py -k "kernel or kaiser or lanczos or triangle" > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
tail -n 4 $OUT/tests.txt
