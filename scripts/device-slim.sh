#!/usr/bin/env bash
# The device tool carries the working tree and the .device pack together under 64 MiB; the tracked tree (~44 MB with
# the shipped model and the MoE golden fixtures) plus a test pack (~45 MB) is over it. Before a device call:
#   bash scripts/device-slim.sh out     moves models/default/model.safetensors, test/fixtures/hf/{gpt-oss*,qwen3-moe*}
#                                       and bench/receipts (~7.5 MB, read by nothing that runs) to .device-aside/
#                                       (ignored by git: .device* is), prints what travels
#   bash scripts/device-slim.sh back    puts them back (run it right after the call; `git status` is clean again)
# `out` also writes the commit into the packs (.device/commit), which the receipts then name, and installs a git
# pre-commit hook that refuses commits until `back` (a commit made while they were aside dropped them once); `back`
# removes it. An existing pre-commit hook of yours is left alone (and then nothing guards).
# Tests that load them say so in their names (models/default, shipped model) or skip with the reason (MoE goldens):
# filter with -t '^(?!.*(shipped model|models/default)).*$'. Never commit while they are out.
set -euo pipefail
cd "$(dirname "$0")/.."
A=.device-aside
HOOK=$(git rev-parse --git-path hooks)/pre-commit
GUARD='# tessera device-slim guard'
case "${1:-}" in
  out)
    # the commit the receipts of this call name (the device copy's git HEAD can be stale): .device/commit travels with
    # the carried pack; bench/commit.ts and the device scripts read it when TESSERA_COMMIT is unset
    for pack in .device .device-ort; do
      [ -d "$pack" ] && echo "$(git rev-parse --short HEAD)$([ -n "$(git status --porcelain --untracked-files=no)" ] && echo +dirty)" > "$pack/commit"
    done
    mkdir -p "$A/fixtures"
    [ -f models/default/model.safetensors ] && mv models/default/model.safetensors "$A/"
    for d in test/fixtures/hf/gpt-oss* test/fixtures/hf/qwen3-moe*; do [ -e "$d" ] && mv "$d" "$A/fixtures/"; done
    [ -d bench/receipts ] && mv bench/receipts "$A/receipts"
    if [ ! -e "$HOOK" ]; then
      mkdir -p "$(dirname "$HOOK")"
      printf '#!/bin/sh\n%s\necho "refusing to commit: scripts/device-slim.sh out has set tracked files aside in %s; run scripts/device-slim.sh back first" >&2\nexit 1\n' "$GUARD" "$A" > "$HOOK"
      chmod +x "$HOOK"
    fi
    echo "set aside: $(du -sh "$A" | cut -f1); the tree that travels: $(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1) bytes + untracked + carried"
    ;;
  back)
    rm -f .device/commit .device-ort/commit
    [ -f "$A/model.safetensors" ] && mv "$A/model.safetensors" models/default/
    for d in "$A"/fixtures/*; do [ -e "$d" ] && mv "$d" test/fixtures/hf/; done
    [ -d "$A/receipts" ] && mv "$A/receipts" bench/receipts
    rmdir "$A/fixtures" "$A" 2>/dev/null || true
    if [ -f "$HOOK" ] && grep -qF "$GUARD" "$HOOK"; then rm -f "$HOOK"; fi
    git status --short
    ;;
  *) echo "usage: bash scripts/device-slim.sh out|back" >&2; exit 2 ;;
esac
