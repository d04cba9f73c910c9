#!/bin/bash
# eleventh session, call 4: test_hardening alone; the suite again, verbose (which files ran on its worker before it)
cd "$(dirname "$0")/.."
T0=$(date +%s)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
export PATH="$PWD/.gpu/peer:$PATH"
echo "== alone $(($(date +%s)-T0)) s"
timeout 100 python3 -m pytest -q -rfE --slow -p no:cacheprovider tests/hardening/test_hardening.py > $OUT/alone.txt 2>&1; echo "rc=$?" >> $OUT/alone.txt; tail -5 $OUT/alone.txt | cut -c1-200
echo "== suite $(($(date +%s)-T0)) s"
timeout 380 python3 -m pytest -v -rfE --slow -n 14 --dist loadfile -p no:cacheprovider > $OUT/suite-v.txt 2>&1; echo "rc=$?" >> $OUT/suite-v.txt
tail -12 $OUT/suite-v.txt | cut -c1-200
w=$(grep -m1 "test_hardening.py" $OUT/suite-v.txt | grep -o "\[gw[0-9]*\]"); echo "worker $w"
grep -F "$w" $OUT/suite-v.txt | grep -o "tests/[^:]*::[^ ]*" | sed 's/::.*//' | uniq -c > $OUT/order.txt; cat $OUT/order.txt
echo "== done $(($(date +%s)-T0)) s"
