#!/usr/bin/env bash
# Run here right before a device call when helpers share the checkout: the device tool copies the working tree, so
# their uncommitted edits would travel. This writes .device-head (ignored by git; carry it with .device): the HEAD
# versions of tracked files changed in the tree, the list of untracked files, and run.sh, which the device command
# sources first to put its copy back at HEAD and enter the device environment:
#   bash scripts/device-snapshot.sh
#   device run (carry .device, .device-head):  source .device-head/run.sh && bash scripts/device-bench.sh ...
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .device-head; mkdir -p .device-head
git rev-parse --short HEAD > .device-head/commit
git diff --name-only HEAD > .device-head/changed
git ls-files --others --exclude-standard > .device-head/untracked
if [ -s .device-head/changed ]; then git archive --format=tar HEAD -- $(git diff --name-only --diff-filter=MD HEAD) | gzip > .device-head/head.tar.gz; fi
git diff --name-only --diff-filter=A HEAD >> .device-head/untracked
cat > .device-head/run.sh <<'EOS'
# sourced from the device copy's root: the tree back to the commit in .device-head/commit (helpers' uncommitted edits
# undone), then the device environment
set -u
xargs -r rm -f < .device-head/untracked
[ -f .device-head/head.tar.gz ] && tar xzf .device-head/head.tar.gz
export TESSERA_COMMIT=$(cat .device-head/commit)
source .device/enter.sh
unset WEBGPU_DAWN_ARGS
EOS
wc -l .device-head/changed .device-head/untracked; du -sh .device-head
