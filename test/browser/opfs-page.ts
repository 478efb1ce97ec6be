/**
 * Test page: opens models/default over HTTP (served under /model/) through the OPFS cache, reads one tensor, and
 * publishes what it saw on `window.tesseraOpfs`; a reload must take every file from OPFS.
 */
import { cachedFolder, opfsCache } from '../../src/formats/cache.ts';
import { urlFolder } from '../../src/formats/web-files.ts';
import { openModelSource } from '../../src/models/source.ts';

async function run() {
  const files: string[] = [];
  const src = await openModelSource(cachedFolder(urlFolder(new URL('/model/', location.href).href), opfsCache('tessera-test'), { onProgress: (p) => p.done === p.total && files.push(p.file) }));
  const name = src.names().sort()[0]!;
  const x = await src.toFloat32(name);
  return { layers: src.config.numLayers, tensors: src.names().length, name, sum: x.reduce((a, b) => a + b, 0), downloaded: files, tokens: src.tokenizer?.encode('In the beginning') ?? [] };
}

const w = window as unknown as { tesseraOpfs?: unknown };
run().then(
  (r) => void (w.tesseraOpfs = r),
  (e: Error) => void (w.tesseraOpfs = { error: `${e.name}: ${e.message}` }),
);
