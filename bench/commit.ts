/** The commit a benchmark receipt names: TESSERA_COMMIT when set (the device machine's copy of the tree can carry a
 * stale git HEAD), else this checkout's HEAD. */
import { execSync } from 'node:child_process';

export function receiptCommit(): string {
  if (process.env.TESSERA_COMMIT) return process.env.TESSERA_COMMIT;
  try {
    return execSync('git rev-parse HEAD', { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  } catch {
    return 'unknown (no git checkout; set TESSERA_COMMIT)';
  }
}
