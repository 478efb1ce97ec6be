/**
 * Test page: the engine in a Web Worker (/worker.js, the bundle of src/web/worker.ts) driven by src/web/client.ts:
 * models/default over HTTP (/model/) with load progress, 16 greedy tokens streamed, a generation cancelled by an
 * AbortSignal after 3 tokens, a chat turn, and an error carried from the worker. Publishes `window.tesseraWorker`.
 */
import { TesseraClient } from '../../src/web/client.ts';

async function run() {
  const client = TesseraClient.fromUrl('/worker.js');
  const device = await client.device();
  const progress: { phase: string; index?: number; total: number }[] = [];
  const model = await client.loadModel(new URL('/model/', location.href).href, {
    cacheName: 'tessera-worker-test',
    onProgress: (p) => progress.push(p.phase === 'upload' ? { phase: p.phase, index: p.index, total: p.total } : { phase: p.phase, total: p.total }),
  });
  // The page stays responsive while the worker generates: count animation frames during the stream.
  let frames = 0;
  let counting = true;
  const tick = () => {
    frames++;
    if (counting) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  const events: { token: number; text: string }[] = [];
  const it = model.generate('In the beginning', { maxTokens: 16, temperature: 0 });
  let r = await it.next();
  while (!r.done) {
    events.push(r.value);
    r = await it.next();
  }
  counting = false;
  const result = r.value;

  const ac = new AbortController();
  const cancelled: number[] = [];
  const c = model.generate('In the beginning', { maxTokens: 400, temperature: 0, ignoreEos: true, signal: ac.signal });
  let cr = await c.next();
  while (!cr.done) {
    cancelled.push(cr.value.token);
    if (cancelled.length === 3) ac.abort();
    cr = await c.next();
  }

  // Leaving the loop early cancels too; the engine is free for the next request at once.
  let broke = 0;
  for await (const _ of model.generate('And God said', { maxTokens: 400, temperature: 0, ignoreEos: true })) if (++broke === 2) break;

  const chat: string[] = [];
  for await (const t of model.chat([{ role: 'user', content: 'Who made the heaven?' }], { maxTokens: 8, temperature: 0 })) chat.push(t.text);

  let error = '';
  try {
    await client.loadModel(new URL('/model/missing/', location.href).href, { cache: false });
  } catch (e) {
    error = `${(e as Error).name}: ${(e as Error).message}`;
  }
  // A load cancelled by its signal rejects with AbortError (checked at each file chunk and tensor).
  let loadAbort = '';
  const ac2 = new AbortController();
  ac2.abort();
  try {
    await client.loadModel(new URL('/model/', location.href).href, { cacheName: 'tessera-worker-abort', signal: ac2.signal });
  } catch (e) {
    loadAbort = `${(e as Error).name}: ${(e as Error).message}`;
  }
  await model.unload();
  client.terminate();
  return {
    adapter: device.adapter,
    features: device.features,
    info: model.info,
    progress,
    ids: events.filter((e) => e.token >= 0).map((e) => e.token),
    text: events.map((e) => e.text).join(''),
    result: { ids: result.ids, text: result.text, finishReason: result.finishReason, aborted: result.aborted },
    frames,
    cancelled: { tokens: cancelled.length, aborted: cr.value.aborted, ids: cr.value.ids.length, finishReason: cr.value.finishReason },
    broke,
    chat: chat.join(''),
    error,
    loadAbort,
  };
}

const w = window as unknown as { tesseraWorker?: unknown };
run().then(
  (r) => void (w.tesseraWorker = r),
  (e: Error) => void (w.tesseraWorker = { error: `${e.name}: ${e.message}\n${e.stack ?? ''}`, failed: true }),
);
