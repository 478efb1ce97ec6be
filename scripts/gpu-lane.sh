#!/usr/bin/env bash
# The GPU lane: the tests that need features SwiftShader lacks (shader-f16, subgroup matrices, wave32), plus the
# benchmarks, on the GPU machine. Run through the device tool from the repo root:
#   bash ../shared/gpu/prepare-device.sh vitest vite fast-check      (once, here)
#   device run (carry .device):  source .device/enter.sh && bash scripts/gpu-lane.sh
# Results go to $OUT (the device tool brings back at most 8 files).
# Size: the tracked tree (~44 MB) plus a vitest pack (~45 MB) is over the device tool's 64 MiB: run
# `bash scripts/device-slim.sh out` before the call (the shipped model and the MoE goldens stay here) and `... back`
# after, and filter the tests that load the model: -t '^(?!.*(shipped model|models/default)).*$'.
set -uo pipefail
OUT=${OUT:-out/gpu-lane}
mkdir -p "$OUT"
# the device machine's copy of the tree can carry a stale git HEAD: device-slim.sh out writes .device/commit (or set TESSERA_COMMIT)
export TESSERA_COMMIT=${TESSERA_COMMIT:-$(cat .device/commit 2>/dev/null || cat .commit 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)}
node bin/tessera.mjs devices --json > "$OUT/devices.json" 2>&1
TESSERA_DAWN_CHECKED=1 node bin/tessera.mjs selftest --json > "$OUT/selftest.json" 2>&1
node node_modules/vitest/vitest.mjs run ${GPU_LANE_TESTS:-test/kernels test/decoder-fused.test.ts test/decoder-fused-variants.test.ts test/models.test.ts test/models-gguf.test.ts test/program.test.ts test/session-prefix.test.ts test/qmoe-gpu.test.ts test/qmoe-gpu-templates.test.ts test/contracts-test-variants.test.ts test/contracts-dynamic.test.ts test/chain.test.ts test/decode-wait.test.ts test/decoder-head-pick.test.ts} \
  --reporter=verbose 2>&1 | tee "$OUT/gpu-tests.log" | grep -E "✓|×|skipped|Tests|FAIL" | tail -60
node --import tsx bench/decode.ts --out "$OUT/bench-decode.json" 2>&1 | tee "$OUT/bench-decode.log"
