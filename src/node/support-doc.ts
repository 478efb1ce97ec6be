/**
 * Node only: writing the kernel support document (docs/kernel-support.md) from harness runs and reach reports. What
 * it holds and how it is parsed and rendered is in src/selftest/support.ts, which imports no Node module.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { TesseraDevice } from '../gpu/device.ts';
import type { ReachReport } from '../registry/reach.ts';
import type { Registry } from '../registry/types.ts';
import type { HarnessOptions } from '../selftest/harness.ts';
import { keptSection, parseReachCells, parseSupportDoc, renderSupportDoc, SUPPORT_DOC, supportColumn, type SupportColumn } from '../selftest/support.ts';

/** Run the harness on `dev` and write (merge) its column into the support doc; returns the markdown. */
export async function writeSupportDoc(dev: TesseraDevice, path = SUPPORT_DOC, opts: HarnessOptions = {}): Promise<string> {
  return writeSupportColumn(path, await supportColumn(dev, opts), { registry: opts.registry });
}

/**
 * Put `column` into the support doc at `path` (created if missing), keeping the other devices' columns. The
 * device's previous column is replaced, or with `merge` (a run of some variants only) updated cell by cell.
 */
export async function writeSupportColumn(path: string, column: SupportColumn, opts: { merge?: boolean; registry?: Registry } = {}): Promise<string> {
  const old = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const existing = parseSupportDoc(old);
  const merged = (o: SupportColumn): SupportColumn => (opts.merge ? { ...column, cells: new Map([...o.cells, ...column.cells]) } : column);
  const columns = existing.some((c) => c.device === column.device) ? existing.map((c) => (c.device === column.device ? merged(c) : c)) : [...existing, column];
  const md = renderSupportDoc(columns, { registry: opts.registry, reachCells: parseReachCells(old), reachSummary: keptSection(old) });
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, md);
  return md;
}

/**
 * Regenerate the whole support doc at `path`: every registry variant with its WGSL, harness and registry cells and,
 * from `reach`, the contract variants naming it and the devices and models selecting it; the device columns of the
 * doc already there (runs of the harness on real devices) are kept as they are.
 */
export async function writeSupportDocument(path: string, opts: { reach: ReachReport; registry?: Registry }): Promise<string> {
  const columns = existsSync(path) ? parseSupportDoc(readFileSync(path, 'utf8')) : [];
  const md = renderSupportDoc(columns, { registry: opts.registry, reach: opts.reach });
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, md);
  return md;
}
