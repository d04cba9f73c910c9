#!/bin/bash
# H200 call 4 of the fourteenth session: the final tree (self-check, mip_box.wgsl): hashes, tests, speed
cd "$(dirname "$0")/.."
T0=$(date +%s)
export GPUTEX_COMMIT=$(cat build/commit.txt)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
timeout 150 python3 benchmarks/mips_float.py --hashes $OUT/mip-ff-hashes-h200.json --against benchmarks/results/mip-ff-hashes-lavapipe.json > $OUT/ff-hashes.txt 2>&1; echo "rc=$?" >> $OUT/ff-hashes.txt
tail -n 3 $OUT/ff-hashes.txt
echo "== tests $(($(date +%s)-T0)) s"
timeout 200 python3 -m pytest -q -n 12 tests/mips/test_floatfloat.py tests/core/test_wait.py tests/transform tests/mips/test_mips.py -k "not kernels_match and not kernels_float32" > $OUT/ff-tests.txt 2>&1; echo "rc=$?" >> $OUT/ff-tests.txt
tail -n 4 $OUT/ff-tests.txt
echo "== speed $(($(date +%s)-T0)) s"
timeout 150 python3 benchmarks/mips_float.py --sizes 2048 4096 4095x4097 --repeat 5 > $OUT/mips-float.txt 2>&1; echo "rc=$?" >> $OUT/mips-float.txt
grep -E "^[0-9]|GPU|rc=" $OUT/mips-float.txt | cut -c1-150
echo "== done $(($(date +%s)-T0)) s"
