#!/usr/bin/env bash
# Writes the AOT files tests/aot_consumer/main.cpp includes, with the tritiumc given:
#   softmax_fp32_1024.{h,cpp}  one variant: fp32 rows of up to 1024, pointers and row lengths
#                              specialized as divisible by 16
#   softmax_any.{h,cpp}        a dispatcher over three variants, tried in this order: that one,
#                              fp32 rows of up to 4096 without ':16' marks, fp16 rows of up to 1024
# Used by tools/ci-aot.sh and tests/aot_consumer/CMakeLists.txt, so both build the same program.
# Usage: generate.sh TRITIUMC OUTPUT_DIR
set -euo pipefail
tritiumc="$1"
out="$2"
aligned='*fp32:16,*fp32:16,i32:16,i32:16,i32,i32:16'
"$tritiumc" --emit=aot --aot-name=softmax_fp32_1024 --n-cols=1024 --signature="$aligned" -o "$out"
"$tritiumc" --emit=aot --aot-name=softmax_any \
  --aot-variant="softmax_any_fp32_1024: --n-cols=1024 --signature=$aligned" \
  --aot-variant='softmax_any_fp32_4096: --n-cols=4096' \
  --aot-variant='softmax_any_fp16_1024: --n-cols=1024 --dtype=fp16' \
  -o "$out"
