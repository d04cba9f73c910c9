#!/bin/bash
# H200 call 1 of the fourteenth session: the float-float box chain of float formats
cd "$(dirname "$0")/.."
T0=$(date +%s)
export GPUTEX_COMMIT=$(cat build/commit.txt)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
timeout 150 python3 benchmarks/mips_float.py --hashes $OUT/mip-ff-hashes-h200.json --against benchmarks/results/mip-ff-hashes-lavapipe.json > $OUT/ff-hashes.txt 2>&1; echo "rc=$?" >> $OUT/ff-hashes.txt
tail -n 8 $OUT/ff-hashes.txt
echo "== tests $(($(date +%s)-T0)) s"
timeout 150 python3 -m pytest -q -n 8 tests/mips/test_floatfloat.py > $OUT/ff-tests.txt 2>&1; echo "rc=$?" >> $OUT/ff-tests.txt
tail -n 5 $OUT/ff-tests.txt
echo "== speed $(($(date +%s)-T0)) s"
timeout 200 python3 benchmarks/mips_float.py --sizes 2048 4096 4095x4097 8192 --repeat 5 --json $OUT/mips-float.json > $OUT/mips-float.txt 2>&1; echo "rc=$?" >> $OUT/mips-float.txt
grep -E "^[0-9]|GPU|rc=" $OUT/mips-float.txt | cut -c1-150
echo "== done $(($(date +%s)-T0)) s"
