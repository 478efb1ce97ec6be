/**
 * Test page: the core as a browser bundle runs the shipped model end to end: models/default over HTTP (/model/),
 * navigator.gpu, 16 greedy tokens for a fixed prompt; publishes the ids and text on `window.tesseraGenerate`.
 */
import { createDevice, describeAdapter } from '../../src/gpu/device.ts';
import { urlFolder } from '../../src/formats/web-files.ts';
import { loadModel, requireTokenizer } from '../../src/models/load.ts';
import { generate } from '../../src/runtime/generate.ts';

async function run() {
  const device = await createDevice();
  const model = await loadModel(device, urlFolder(new URL('/model/', location.href).href));
  const ids = requireTokenizer(model, 'the test page').encode('In the beginning', { addSpecialTokens: true });
  const r = await generate(model, ids, { maxTokens: 16, temperature: 0 });
  const out = { adapter: describeAdapter(device.caps), ids: r.ids, text: r.text };
  model.destroy();
  device.destroy();
  return out;
}

const w = window as unknown as { tesseraGenerate?: unknown };
run().then(
  (r) => void (w.tesseraGenerate = r),
  (e: Error) => void (w.tesseraGenerate = { error: `${e.name}: ${e.message}\n${e.stack ?? ''}` }),
);
