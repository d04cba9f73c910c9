#!/bin/bash
# eleventh session, call 5: which test of test_transform.py leaves the process unable to make a device
cd "$(dirname "$0")/.."
T0=$(date +%s)
python3 setup.py build_ext --inplace -q 2>&1 | grep -iE "^error"
C='tests/hardening/test_hardening.py::test_corpus_case[truncated.gif]'
for t in test_box_resize_rgba8_matches_float64 test_kernel_resize_matches_float64 test_resize_other_formats test_normal_map_resize_is_unit_length test_chain_starts_from_the_resized_image test_max_size_and_pot_on_the_command_line test_resize_errors test_swizzle_on_the_command_line test_pack_on_the_command_line test_array_and_cube_layers_are_resized_like_single_images test_float64_formats_resize_correctly_rounded test_library_upload_with_size; do
  timeout 60 python3 -m pytest -q -p no:cacheprovider "tests/transform/test_transform.py::$t" "$C" > /tmp/b.txt 2>&1
  echo "$t: $(tail -1 /tmp/b.txt) $(grep -m1 -o 'Parent device is lost' /tmp/b.txt)"
  [ $(($(date +%s)-T0)) -gt 170 ] && break
done
echo "== done $(($(date +%s)-T0)) s"
