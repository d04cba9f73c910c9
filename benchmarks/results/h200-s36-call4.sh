#!/bin/bash
# H200 call 4 of the thirteenth session: what fresh textures cost (fresh_textures.py), and the float32
# chain with and without kept work textures, each size in a fresh process. carry [".gpu", "build/next.sh"].
cd "$(dirname "$0")/.."
T0=$(date +%s)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
timeout 120 python3 benchmarks/fresh_textures.py --sizes 1024 2048 4096 8192 --repeat 7 > $OUT/fresh.txt 2>&1; echo "rc=$?" >> $OUT/fresh.txt
cat $OUT/fresh.txt
for s in 4096 8192 2048; do
  echo "== f32 $s $(($(date +%s)-T0)) s"
  timeout 120 python3 benchmarks/mips_kernels.py --sizes $s --filters kaiser --with-float32 --repeat 7 > $OUT/kernels-$s.txt 2>&1; echo "rc=$?" >> $OUT/kernels-$s.txt
  grep -E "GPU|rc=" $OUT/kernels-$s.txt | cut -c1-120
done
echo "== done $(($(date +%s)-T0)) s"
