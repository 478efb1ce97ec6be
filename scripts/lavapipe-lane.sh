#!/usr/bin/env bash
# The f16 lane on a CPU machine: Mesa's lavapipe (llvmpipe) Vulkan driver gives Dawn an adapter with shader-f16 and
# subgroups (size 8), which SwiftShader lacks, so the kernels that need shader-f16 run against their CPU references
# without a GPU. Debian 12's Mesa (22.3) lacks a Vulkan feature Dawn requires; Mesa 25 from bookworm-backports works.
#   bash scripts/lavapipe-lane.sh                 install if needed, then run every f16 variant of the registry
#   bash scripts/lavapipe-lane.sh --filter rope   only variants whose id contains "rope" (as tessera selftest)
#   bash scripts/lavapipe-lane.sh --support       also write the lavapipe column of docs/kernel-support.md
# Each variant runs in its own process with a time limit (llvmpipe compiles every pipeline; heavy cases are left out
# as on SwiftShader). Results: out/lavapipe/results.txt, one selftest row per variant.
set -uo pipefail
cd "$(dirname "$0")/.."
ICD=$(ls /usr/share/vulkan/icd.d/lvp_icd*.json 2>/dev/null | head -1)
mesa=$(dpkg-query -W -f '${Version}' mesa-vulkan-drivers 2>/dev/null || true)
if [ -z "$ICD" ] || [[ "$mesa" == 22.* ]]; then
  if [ "$(id -u)" = 0 ]; then SUDO=(); else SUDO=(sudo); fi
  echo "lavapipe-lane: installing mesa-vulkan-drivers from bookworm-backports (Mesa 25)..." >&2
  echo "deb http://deb.debian.org/debian bookworm-backports main" | "${SUDO[@]}" tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq >/dev/null
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends -t bookworm-backports mesa-vulkan-drivers >/dev/null
  ICD=$(ls /usr/share/vulkan/icd.d/lvp_icd*.json | head -1)
fi
export VK_DRIVER_FILES=$ICD XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
filter="" support=()
while [ $# -gt 0 ]; do
  case $1 in
    --filter) filter=$2; shift 2 ;;
    --support) support=(--support); shift ;;
    *) echo "lavapipe-lane: unknown argument $1" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-out/lavapipe}
mkdir -p "$OUT"
: > "$OUT/results.txt"
# the variants that need shader-f16 (the registry's requires) of the operations the harness has references for
# (tessera selftest lists no others), optionally filtered
variants=$(node --import tsx -e '
  const { defaultRegistry } = await import("./src/node/registry.ts");
  const { REFERENCE_OPS } = await import("./src/reference/ops.ts");
  for (const op of defaultRegistry().operations.values())
    for (const v of op.variants.values())
      if (REFERENCE_OPS.includes(op.name) && v.requires.includes("shader-f16") && v.id.includes(process.argv[1] ?? "")) console.log(v.id);
' "$filter")
fails=0
for v in $variants; do
  row=$(timeout 300 node bin/tessera.mjs selftest --filter "$v" "${support[@]}" 2>/dev/null | grep -E "^$v " | head -1)
  [ -n "$row" ] || row="$v  timeout/crash"
  echo "$row" | tee -a "$OUT/results.txt"
  [[ "$row" =~ \ (ok|no-wgsl)\  ]] || fails=$((fails + 1))
done
echo "lavapipe-lane: $(wc -l < "$OUT/results.txt") variants, $fails not ok (rows in $OUT/results.txt)"
[ $fails -eq 0 ]
