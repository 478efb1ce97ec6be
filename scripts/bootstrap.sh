#!/usr/bin/env bash
# Makes a fresh Debian machine with Node 20 ready to run Tessera and its tests (idempotent, fast when done):
#  - Debian's chromium (ships the SwiftShader Vulkan driver; also the browser for the browser test) and libvulkan1,
#    when no Vulkan driver is set up;
#  - npm dependencies (npm ci) when node_modules is missing or older than package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/.."
need_apt=()
[ -e /usr/lib/chromium/vk_swiftshader_icd.json ] && [ -x /usr/bin/chromium ] || need_apt+=(chromium)
ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1' || need_apt+=(libvulkan1)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=(); elif command -v sudo >/dev/null; then SUDO=(sudo); else
    echo "tessera: needs Debian packages ${need_apt[*]}; run as root: apt-get install -y --no-install-recommends ${need_apt[*]}" >&2
    exit 1
  fi
  echo "tessera: installing ${need_apt[*]} (SwiftShader Vulkan driver for WebGPU without a GPU)..." >&2
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq >/dev/null
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "tessera: installing npm dependencies (npm ci)..." >&2
  # onnxruntime-node's install script fetches extra binaries from an unreachable host; its CPU provider is bundled.
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error >&2
fi
