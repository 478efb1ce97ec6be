/** The commit a benchmark receipt names: TESSERA_COMMIT when set (the device machine's copy of the tree can carry a
 * stale git HEAD), else .device/commit (scripts/device-slim.sh writes it before a device call), else this checkout's
 * HEAD. */
import { execSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

export function receiptCommit(): string {
  if (process.env.TESSERA_COMMIT) return process.env.TESSERA_COMMIT;
  // written by scripts/device-slim.sh into the pack a device call carries
  if (existsSync('.device/commit')) return readFileSync('.device/commit', 'utf8').trim();
  try {
    return execSync('git rev-parse HEAD', { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  } catch {
    return 'unknown (no git checkout; set TESSERA_COMMIT)';
  }
}
