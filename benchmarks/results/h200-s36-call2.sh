#!/bin/bash
# H200 call 2 of the thirteenth session: the float32 chain's forms (tiles / 2d / tiles after level 1 /
# wgpu's own clears; the last two were variants of the benchmark then, removed after this call), the tests
# of the float32 kernels and the render path. carry [".gpu", "build/next.sh"].
cd "$(dirname "$0")/.."
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
timeout 200 python3 benchmarks/mips_kernels.py --sizes 4096 8192 4095x4097 --filters kaiser --with-float32 --repeat 7 > $OUT/kernels-f32.txt 2>&1
timeout 100 python3 benchmarks/mips_kernels.py --sizes 4096 --filters kaiser --with-float32 --repeat 7 > $OUT/kernels-f32b.txt 2>&1
timeout 120 python3 -m pytest -q -n 8 tests/mips/test_float32_kernels.py tests/transform/test_transform.py tests/mips/test_mips.py -k "kernel or float32 or tile or render_path or coverage" > $OUT/tests.txt 2>&1
