#!/usr/bin/env bash
set -uo pipefail
source .device/enter.sh
unset WEBGPU_DAWN_ARGS
export TESSERA_COMMIT=$(cat .device/commit)
R=$OUT/r; mkdir -p $R
(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,pstate --format=csv -lms 250 > $R/smi.csv 2>&1) &
SMI=$!
timeout 220 node node_modules/vitest/vitest.mjs run test/kernels test/decoder-fused.test.ts test/decoder-fused-variants.test.ts test/models.test.ts test/models-gguf.test.ts test/program.test.ts test/session-prefix.test.ts test/qmoe-gpu.test.ts test/qmoe-gpu-templates.test.ts test/contracts-test-variants.test.ts test/contracts-dynamic.test.ts -t '^(?!.*(shipped model|models/default)).*$' --reporter=verbose > $R/gpu-lane-tests.txt 2>&1
echo "lane rc=$?"; grep -E "Test Files|Tests |FAIL|✗|×" $R/gpu-lane-tests.txt | head -20
date +%T > $R/decode-start.txt
for t in d2a d3a d2b d3b d2c d3c; do
  d=${t:1:1}
  TESSERA_DECODE_DEPTH=$d timeout 60 node --import tsx bench/decode.ts --presets llama-1b-128k --quant q4k --prefill '' --tokens 128 --out $R/decode-1b-$t.json > $R/decode-1b-$t.log 2>&1
  echo "1b $t rc=$? $(date +%T)"; grep "tok/s" $R/decode-1b-$t.log | cut -c1-260
done
timeout 90 node --import tsx bench/decode.ts --presets llama-8b --quant q4k --prefill '' --tokens 128 --out $R/decode-8b.json > $R/decode-8b.log 2>&1
echo "8b rc=$?"; grep "tok/s" $R/decode-8b.log | cut -c1-300
kill $SMI 2>/dev/null
tar czf $OUT/r.tgz -C $R . && rm -rf $R
