#!/bin/bash
# Prepared in the eleventh session for the next H200 call (not yet run). From /work/main:
#   rm -rf build/cont && mkdir -p build/cont && git -C /work/wt/h16cont archive h16cont gputex benchmarks setup.py pyproject.toml tests | tar -x -C build/cont
#   cp benchmarks/results/h200-next-s35.sh build/next.sh
#   run: carry [".gpu", "build/cont", "build/next.sh"], command `source .gpu/enter.sh && bash build/next.sh` (~8 min with the start)
# 1. the h16cont branch: the second pass by the first pass's last workgroups against main's chain, and
#    what carrying its code costs the first pass (contonly); 8192² is a control (its plan does not continue)
# 2. the whole suite: were the eleventh session's "Parent device is lost" failures (one xdist worker's
#    new devices, after test_transform.py) the leaked sessions fixed in 103b121?
cd "$(dirname "$0")/.."
T0=$(date +%s)
for t in . build/cont; do (cd $t && python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"); done
echo "== cont variants $(($(date +%s)-T0)) s"
(cd build/cont && timeout 150 python3 benchmarks/mip_spd_variants.py --sizes 4096 8192 --repeat 9 --stored --no-fast --variants base cont contonly base cont contonly) > $OUT/variants-cont.txt 2>&1; echo "rc=$?" >> $OUT/variants-cont.txt
grep -E "^[0-9]|GPU|DIFF|note|rc=|Error|error" $OUT/variants-cont.txt | cut -c1-170
echo "== suite $(($(date +%s)-T0)) s"
export PATH="$PWD/.gpu/peer:$PATH"
timeout 380 python3 -m pytest -q -rfE --slow -n 14 --dist loadfile -p no:cacheprovider > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt
tail -15 $OUT/suite.txt | cut -c1-200
echo "== done $(($(date +%s)-T0)) s"
