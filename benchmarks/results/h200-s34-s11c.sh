#!/bin/bash
# eleventh session, call 3: variants (fixed script) + the whole suite
cd "$(dirname "$0")/.."
export GPUTEX_COMMIT=$(cat build/commit.txt)
T0=$(date +%s)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
echo "== variants $(($(date +%s)-T0)) s"
timeout 110 python3 benchmarks/mip_spd_variants.py --sizes 4096 8192 --repeat 9 --stored --no-fast --variants base nofirst pairs prefetch base nofirst pairs prefetch > $OUT/variants.txt 2>&1; echo "rc=$?" >> $OUT/variants.txt
grep -E "^[0-9]|GPU|DIFF|note|rc=|Error|error" $OUT/variants.txt | cut -c1-170
echo "== suite $(($(date +%s)-T0)) s"
export PATH="$PWD/.gpu/peer:$PATH"
timeout 420 python3 -m pytest -q -rfE --slow -n 14 --dist loadfile -p no:cacheprovider > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
tail -25 $OUT/suite.txt | cut -c1-300
echo "== done $(($(date +%s)-T0)) s"
