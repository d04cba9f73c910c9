#!/bin/bash
# H200 call 5 of the thirteenth session (prepared as h200-next-s37.sh), run at 32ab5db. From /work/main:
#   cp benchmarks/results/h200-next-s37.sh build/next.sh
#   run: carry [".gpu", "build/next.sh"], command `source .gpu/enter.sh && bash build/next.sh` (~3 min with the start)
# 1. the float32 chains with the work textures kept up to 1 GiB, as the default now runs them (measured only as the
#    variant `f32 keep` in the thirteenth session), each size in a fresh process
# 2. what fresh textures cost, again (a regression check of the driver's behaviour)
# 3. the box chain (unchanged since 16dcb19), recorded
cd "$(dirname "$0")/.."
T0=$(date +%s)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
for s in 4096 8192 4095x4097; do
  timeout 120 python3 benchmarks/mips_kernels.py --sizes $s --with-float32 --repeat 7 > $OUT/kernels-$s.txt 2>&1; echo "rc=$?" >> $OUT/kernels-$s.txt
  grep -E "GPU|rc=" $OUT/kernels-$s.txt | cut -c1-120
done
echo "== fresh $(($(date +%s)-T0)) s"
timeout 100 python3 benchmarks/fresh_textures.py --sizes 1024 2048 4096 --repeat 7 > $OUT/fresh.txt 2>&1; echo "rc=$?" >> $OUT/fresh.txt
cat $OUT/fresh.txt
echo "== box $(($(date +%s)-T0)) s"
timeout 150 python3 benchmarks/mips.py --sizes 4096 8192 8191 4095x4097 --skip-cpu --precisions exact --repeat 9 --record > $OUT/mips.txt 2>&1; echo "rc=$?" >> $OUT/mips.txt
tail -n 12 $OUT/mips.txt | cut -c1-200
cp benchmarks/results/mips.jsonl $OUT/ 2>/dev/null
echo "== done $(($(date +%s)-T0)) s"
