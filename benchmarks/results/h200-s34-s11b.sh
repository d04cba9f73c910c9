#!/bin/bash
# eleventh session, call 2: main 72d9235 (first entry on): variants + probes, mips.py --record, hashes, spd tests
cd "$(dirname "$0")/.."
export GPUTEX_COMMIT=72d9235
T0=$(date +%s)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
echo "== variants $(($(date +%s)-T0)) s"
timeout 200 python3 benchmarks/mip_spd_variants.py --sizes 4096 8192 --repeat 9 --stored --no-fast --variants base nofirst noreach noword nolin base nofirst noreach noword nolin > $OUT/variants.txt 2>&1; echo "rc=$?" >> $OUT/variants.txt
grep -E "^[0-9]|GPU|DIFF|rc=|Error|error" $OUT/variants.txt | cut -c1-170
echo "== mips $(($(date +%s)-T0)) s"
timeout 70 python3 benchmarks/mips.py --sizes 4096 8192 8191 4095x4097 --skip-cpu --precisions exact --repeat 9 --record > $OUT/mips.txt 2>&1; echo "rc=$?" >> $OUT/mips.txt
grep -E "exact \(integer\)|rc=" $OUT/mips.txt | cut -c1-170; tail -4 benchmarks/results/mips.jsonl >> $OUT/mips.txt
echo "== hashes $(($(date +%s)-T0)) s"
for f in rgba8unorm-srgb bgra8unorm-srgb rgba8unorm rg8unorm r8unorm; do timeout 35 python3 benchmarks/mips.py --hashes /tmp/h-$f.json --hash-formats $f --against benchmarks/results/mip-hashes-lavapipe.json > /tmp/hash-$f.txt 2>&1; echo "$f: $(tail -1 /tmp/hash-$f.txt)" | tee -a $OUT/hashes.txt; done
echo "== tests $(($(date +%s)-T0)) s"
timeout 120 python3 -m pytest -q -rf -n 14 -p no:cacheprovider --slow tests/mips/test_spd_first_entry.py tests/mips/test_spd_handoff.py tests/mips/test_mips_spd.py tests/mips/test_mips_store.py tests/mips/test_spd_code_words.py tests/mips/test_spd_one_threshold.py tests/mips/test_spd_subgroups.py > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt; tail -4 $OUT/tests.txt
echo "== done $(($(date +%s)-T0)) s"
