/**
 * `npm run support` (package.json) writes docs/kernel-support.md through `tessera selftest --support <file>`. Run here
 * as the script runs it, with the file redirected to a temporary copy of the doc and a filter that keeps it fast:
 * the device's column gets the filtered variant's cell, the other cells and the other devices' columns stay.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSupportDoc, SUPPORT_DOC } from '../src/selftest/support.ts';
import { tessera } from './helpers/cli.ts';

const script = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts.support!;

describe('npm run support', () => {
  it('is `tessera selftest --support docs/kernel-support.md`', () => {
    expect(script.split(/\s+/)).toEqual(['node', 'bin/tessera.mjs', 'selftest', '--support', SUPPORT_DOC]);
  });

  it('writes the device column of the support doc and keeps the rest (filtered to silu.default)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-support-cli-'));
    try {
      const doc = join(dir, 'kernel-support.md');
      copyFileSync(SUPPORT_DOC, doc);
      const before = parseSupportDoc(readFileSync(doc, 'utf8'));
      const args = script.split(/\s+/).slice(2).map((a) => (a === SUPPORT_DOC ? doc : a));
      const r = await tessera(...args, '--filter', 'silu.default');
      expect(r.stderr).toMatch(/wrote the ".+" column of .*kernel-support\.md/);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/silu\.default\s+ok\s+7\/7/);
      const after = parseSupportDoc(readFileSync(doc, 'utf8'));
      const device = /wrote the "(.+)" column/.exec(r.stderr)![1]!;
      const col = after.find((c) => c.device === device)!;
      expect(col.cells.get('silu.default')).toBe('ok (7 cases)');
      for (const old of before) {
        const now = after.find((c) => c.device === old.device)!;
        for (const [id, cell] of old.cells) if (!(old.device === device && id.startsWith('silu.default'))) expect(now.cells.get(id), `${old.device} ${id}`).toBe(cell);
      }
      // a file that does not exist yet is created with this device's column only
      const fresh = join(dir, 'new', 'support.md');
      const r2 = await tessera('selftest', '--support', fresh, '--filter', 'residual.default', '--json');
      expect(r2.code, r2.stderr).toBe(0);
      expect(JSON.parse(r2.stdout).rows.map((x: { variant: string }) => x.variant)).toContain('residual.default');
      const made = parseSupportDoc(readFileSync(fresh, 'utf8'));
      expect(made.map((c) => c.device)).toEqual([device]);
      expect(made[0]!.cells.get('residual.default')).toMatch(/^ok \(\d+ cases\)$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
