#!/bin/bash
# h16one's H200 call: run from build/h16one (after source .gpu/enter.sh at the repo root)
T0=$(date +%s)
export PYTHONPATH="$PWD:$PYTHONPATH"
python3 -c "import gputex; print('gputex', gputex.__file__)" > $OUT/log.txt 2>&1
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error" >> $OUT/log.txt
echo "== variants $(($(date +%s)-T0)) s" >> $OUT/log.txt
timeout 110 python3 benchmarks/mip_spd_variants.py --sizes 4096 8192 --repeat 9 --stored --no-fast --variants nohand base tailser base tailser nohand handonly > $OUT/variants.txt 2>&1; echo "rc=$?" >> $OUT/variants.txt
echo "== mips $(($(date +%s)-T0)) s" >> $OUT/log.txt
timeout 45 python3 benchmarks/mips.py --sizes 4096 8192 --skip-cpu --precisions exact --repeat 9 > $OUT/mips.txt 2>&1; echo "rc=$?" >> $OUT/mips.txt
echo "== tests $(($(date +%s)-T0)) s" >> $OUT/log.txt
timeout 100 python3 -m pytest -v -n 8 -p no:cacheprovider -rf tests/mips/test_spd_handoff.py > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
echo "== main mips $(($(date +%s)-T0)) s" >> $OUT/log.txt
left=$((262-$(date +%s)+T0))
if [ $left -gt 25 ]; then (cd ../.. && export PYTHONPATH="$PWD:$PYTHONPATH" && python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"; timeout $((left-10)) python3 benchmarks/mips.py --sizes 4096 8192 --skip-cpu --precisions exact --repeat 9) > $OUT/mips-main.txt 2>&1; echo "rc=$?" >> $OUT/mips-main.txt; fi
echo "== done $(($(date +%s)-T0)) s" >> $OUT/log.txt
