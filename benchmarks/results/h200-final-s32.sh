#!/bin/bash
# the ninth session's integrated H200 call (at most 8 files under $OUT)
cd "$(dirname "$0")/.."
T0=$(date +%s)
for t in . build/m0; do (cd $t && python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error" ); done
echo "== mips $(($(date +%s)-T0)) s"
for t in build/m0 .; do n=$([ $t = . ] && echo now || echo m0); (cd $t && timeout 70 python3 benchmarks/mips.py --sizes 4096 8192 8191 4095x4097 --skip-cpu --precisions exact --repeat 9 $([ $t = . ] && echo --record)) >> $OUT/mips.txt 2>&1; echo "$n"; grep -E "exact \(integer\)" $OUT/mips.txt | tail -4 | cut -c1-160; done
tail -4 benchmarks/results/mips.jsonl >> $OUT/mips.txt
echo "== hashes $(($(date +%s)-T0)) s"
for f in rgba8unorm-srgb bgra8unorm-srgb rgba8unorm; do timeout 35 python3 benchmarks/mips.py --hashes /tmp/h-$f.json --hash-formats $f --against benchmarks/results/mip-hashes-lavapipe.json > /tmp/hash-$f.txt 2>&1; echo "$f: $(tail -1 /tmp/hash-$f.txt)" | tee -a $OUT/hashes.txt; done
echo "== tests $(($(date +%s)-T0)) s"
timeout 110 python3 -m pytest -q -rf -n 14 -p no:cacheprovider tests/mips/test_spd_handoff.py tests/mips/test_mips_spd.py tests/mips/test_mips_store.py > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt; tail -6 $OUT/tests.txt
echo "== done $(($(date +%s)-T0)) s"
