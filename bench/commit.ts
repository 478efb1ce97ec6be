/** The commit a benchmark receipt names: TESSERA_COMMIT when set (the device machine's copy of the tree can carry a
 * stale git HEAD), else .device/commit (scripts/device-slim.sh writes it before a device call), else this checkout's
 * HEAD. */
import { execSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { describeAdapter, type TesseraDevice } from '../src/gpu/device.ts';

const git = (args: string) => execSync(`git ${args}`, { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();

/** The commit, and whether it came from this checkout's git (else the caller named it). */
function resolve(): { commit: string; fromGit: boolean } {
  if (process.env.TESSERA_COMMIT) return { commit: process.env.TESSERA_COMMIT, fromGit: false };
  // written by scripts/device-slim.sh into the pack a device call carries (with +dirty when the tree was)
  if (existsSync('.device/commit')) return { commit: readFileSync('.device/commit', 'utf8').trim(), fromGit: false };
  try {
    return { commit: git('rev-parse HEAD'), fromGit: true };
  } catch {
    return { commit: 'unknown (no git checkout; set TESSERA_COMMIT)', fromGit: false };
  }
}

export function receiptCommit(): string {
  return resolve().commit;
}

/** receiptCommit and whether the checkout has uncommitted changes (null where the commit was not read from git here:
 * a named commit carries its own +dirty). */
export function receiptCommitState(): { commit: string; dirty: boolean | null } {
  const { commit, fromGit } = resolve();
  if (!fromGit) return { commit, dirty: null };
  try {
    return { commit, dirty: git('status --porcelain').length > 0 };
  } catch {
    return { commit, dirty: null };
  }
}

/** The fields every benchmark receipt opens with: what ran, when, where (host, adapter, Dawn's options) and at which
 * commit. */
export function receiptHeader(benchmark: string, dev: TesseraDevice): Record<string, unknown> {
  return {
    benchmark,
    date: new Date().toISOString(),
    machine: hostname(),
    adapter: describeAdapter(dev.caps),
    adapterInfo: dev.caps.adapterInfo,
    commit: receiptCommit(),
    dawnArgs: dev.dawnArgs ?? [],
  };
}
