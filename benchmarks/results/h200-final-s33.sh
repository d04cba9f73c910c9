#!/bin/bash
# tenth session, call 4 (final): mips.py against 2fc7941 (recorded), variants, hashes, tests
cd "$(dirname "$0")/.."
export GPUTEX_COMMIT=f5e809d
T0=$(date +%s)
for t in . build/m0; do (cd $t && python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error" ); done
echo "== mips $(($(date +%s)-T0)) s"
for t in build/m0 .; do n=$([ $t = . ] && echo now || echo m0); (cd $t && GPUTEX_COMMIT=$([ $t = . ] && echo f5e809d || echo 2fc7941) timeout 70 python3 benchmarks/mips.py --sizes 4096 8192 8191 4095x4097 --skip-cpu --precisions exact --repeat 9 $([ $t = . ] && echo --record)) >> $OUT/mips.txt 2>&1; echo "$n"; grep -E "exact \(integer\)" $OUT/mips.txt | tail -4 | cut -c1-170; done
tail -4 benchmarks/results/mips.jsonl >> $OUT/mips.txt
echo "== variants $(($(date +%s)-T0)) s"
timeout 80 python3 benchmarks/mip_spd_variants.py --sizes 4096 8192 --repeat 9 --stored --no-fast --variants base noaf base noaf > $OUT/variants.txt 2>&1; echo "rc=$?" >> $OUT/variants.txt
grep -E "^[0-9]|GPU|DIFF|rc=|Error|error" $OUT/variants.txt | cut -c1-170
echo "== hashes $(($(date +%s)-T0)) s"
for f in rgba8unorm-srgb bgra8unorm-srgb rgba8unorm; do timeout 35 python3 benchmarks/mips.py --hashes /tmp/h-$f.json --hash-formats $f --against benchmarks/results/mip-hashes-lavapipe.json > /tmp/hash-$f.txt 2>&1; echo "$f: $(tail -1 /tmp/hash-$f.txt)" | tee -a $OUT/hashes.txt; done
echo "== tests $(($(date +%s)-T0)) s"
timeout 110 python3 -m pytest -q -rf -n 14 -p no:cacheprovider --slow tests/mips/test_spd_handoff.py tests/mips/test_mips_spd.py tests/mips/test_mips_store.py tests/mips/test_spd_code_words.py tests/mips/test_spd_one_threshold.py tests/mips/test_spd_subgroups.py > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt; tail -4 $OUT/tests.txt
echo "== done $(($(date +%s)-T0)) s"
