/**
 * The demo app: the engine runs in a Web Worker (src/web/worker.ts) behind src/web/client.ts; this page only shows
 * it. Query string (for links and automation): ?model=default|URL&prompt=...&max_tokens=16&temperature=0&chat=1&autorun=1
 * loads, generates once, leaves the text in [data-testid=output] (its ids in data-ids) and sets data-state="done" on
 * <body>, or data-state="error" with the message in data-error and [data-testid=error].
 *
 * An embedding model (an encoder folder: BERT, XLM-R, a cross-encoder, Qwen3-Embedding) shows the semantic-search
 * panel in place of the generation panel: documents ranked by the cosine similarity of their embeddings to the query's,
 * or by a cross-encoder's rerank() scores. ?model=URL&query=...&docs=a|b|c&autorun=1 loads, searches once, leaves the
 * ranked documents in [data-testid=search-results] (each [data-testid=search-result] with data-score and data-index)
 * and sets data-state="done".
 */
import { TesseraClient, type LoadProgressEvent, type ModelSourceInput, type RemoteModel } from '../src/web/client.ts';
import { searchDocuments } from '../src/web/search.ts';

type State = 'idle' | 'loading' | 'ready' | 'generating' | 'searching' | 'done' | 'cancelled' | 'error';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const el = {
  load: $<HTMLButtonElement>('load'),
  cache: $<HTMLInputElement>('cache'),
  url: $<HTMLInputElement>('url'),
  folder: $<HTMLInputElement>('folder'),
  gguf: $<HTMLInputElement>('gguf'),
  progress: $<HTMLProgressElement>('progress'),
  progressLabel: $('progress-label'),
  modelInfo: $('model-info'),
  log: $('log'),
  prompt: $<HTMLTextAreaElement>('prompt'),
  chat: $<HTMLInputElement>('chat'),
  maxTokens: $<HTMLInputElement>('max-tokens'),
  temperature: $<HTMLInputElement>('temperature'),
  ignoreEos: $<HTMLInputElement>('ignore-eos'),
  generate: $<HTMLButtonElement>('generate'),
  stop: $<HTMLButtonElement>('stop'),
  output: $('output'),
  stats: $('stats'),
  error: $('error'),
  chatPanel: $('chat-panel'),
  searchPanel: $('search-panel'),
  searchMethod: $('search-method'),
  docs: $<HTMLTextAreaElement>('docs'),
  query: $<HTMLInputElement>('query'),
  search: $<HTMLButtonElement>('search'),
  searchStats: $('search-stats'),
  searchResults: $<HTMLOListElement>('search-results'),
  adapter: $('adapter'),
  features: $('features'),
  limits: $('limits'),
  selftest: $<HTMLButtonElement>('selftest'),
  selftestFilter: $<HTMLInputElement>('selftest-filter'),
  selftestStatus: $('selftest-status'),
  selftestTable: $('selftest-table'),
};

const client = new TesseraClient(new Worker(new URL('../src/web/worker.ts', import.meta.url), { type: 'module' }));
let model: RemoteModel | undefined;
let running: AbortController | undefined;
const history: { role: string; content: string }[] = [];

function setState(s: State, message?: string): void {
  document.body.dataset.state = s;
  if (s === 'error') {
    document.body.dataset.error = message ?? '';
    el.error.textContent = message ?? '';
  } else {
    delete document.body.dataset.error;
    el.error.textContent = '';
  }
  const busy = s === 'loading' || s === 'generating' || s === 'searching';
  el.generate.disabled = !model || model.kind !== 'decoder' || busy;
  el.search.disabled = !model || model.kind !== 'encoder' || busy;
  el.load.disabled = busy;
  el.stop.disabled = s !== 'generating' && s !== 'loading';
}

const mb = (n: number) => `${(n / 1e6).toFixed(n < 1e7 ? 2 : 0)} MB`;
const errorText = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

/** The shipped model sits next to the app (tessera web serves models/default at models/default/). */
function defaultModelUrl(): string {
  return new URL('models/default/', location.href).href;
}

function chosenSource(): ModelSourceInput {
  const kind = (document.querySelector('input[name=source]:checked') as HTMLInputElement).value;
  if (kind === 'url') {
    if (!el.url.value) throw new Error('enter a model URL (an HF folder ending in "/" or a .gguf file)');
    return el.url.value;
  }
  if (kind === 'folder') {
    if (!el.folder.files?.length) throw new Error('choose a model folder (config.json, *.safetensors, tokenizer.json)');
    return Array.from(el.folder.files);
  }
  if (kind === 'gguf') {
    const f = el.gguf.files?.[0];
    if (!f) throw new Error('choose a .gguf file');
    return f;
  }
  return defaultModelUrl();
}

function showProgress(p: LoadProgressEvent, downloaded: { any: boolean }): void {
  if (p.phase === 'download') {
    downloaded.any = true;
    el.progress.value = p.total ? (50 * p.done) / p.total : 0;
    el.progressLabel.textContent = `downloading ${p.file.split('/').pop()}: ${mb(p.done)} / ${mb(p.total)}`;
  } else {
    const base = downloaded.any ? 50 : 0;
    el.progress.value = base + ((100 - base) * p.index) / p.total;
    el.progressLabel.textContent = `uploading to the GPU: tensor ${p.index} / ${p.total} (${p.tensor})`;
  }
}

async function load(source: ModelSourceInput): Promise<void> {
  setState('loading');
  running = new AbortController();
  el.progress.value = 0;
  el.progressLabel.textContent = 'opening…';
  el.modelInfo.textContent = '';
  if (model) {
    await model.unload().catch(() => undefined);
    model = undefined;
  }
  const downloaded = { any: false };
  const m = await client.loadModel(source, { cache: el.cache.checked, signal: running.signal, onProgress: (p) => showProgress(p, downloaded) });
  model = m;
  history.length = 0;
  el.log.textContent = '';
  const i = m.info;
  el.progress.value = 100;
  el.progressLabel.textContent = `loaded in ${(i.loadMs / 1000).toFixed(2)} s`;
  // the search panel for an embedding model, the generation panel for a decoder
  el.searchPanel.hidden = i.kind !== 'encoder';
  el.chatPanel.hidden = i.kind === 'encoder';
  el.searchResults.textContent = '';
  el.searchStats.textContent = '';
  if (i.kind === 'encoder' && i.embedding) {
    const e = i.embedding;
    el.searchMethod.textContent = e.reranker ? '(cross-encoder: rerank scores)' : `(cosine of ${e.dims}-dim embeddings)`;
    el.modelInfo.textContent =
      `${i.path}: ${i.architecture}, ${i.layers} layers, hidden ${i.hidden}, vocab ${i.vocab}, ${(i.parameters / 1e6).toFixed(2)}M parameters, ` +
      `${mb(i.weightBytes)} on the GPU (${i.quant}), ` +
      (e.reranker ? 'cross-encoder' : `embeddings: ${e.dims} dims, pooling ${e.pooling}${e.normalize ? ', normalized' : ''}`) +
      `, at most ${i.contextLength} tokens`;
    setState('ready');
    return;
  }
  el.modelInfo.textContent =
    `${i.path}: ${i.architecture}, ${i.layers} layers, hidden ${i.hidden}, vocab ${i.vocab}, ${(i.parameters / 1e6).toFixed(2)}M parameters, ` +
    `${mb(i.weightBytes)} on the GPU (${Object.entries(i.storage).map(([k, v]) => `${k}: ${v}`).join(', ') || i.quant}), context ${i.contextLength}` +
    (i.hasChatTemplate ? ', chat template' : ', no chat template');
  el.chat.disabled = !i.hasChatTemplate;
  if (!i.hasChatTemplate) el.chat.checked = false;
  setState('ready');
}

async function generate(): Promise<void> {
  if (!model) throw new Error('load a model first');
  const prompt = el.prompt.value;
  const opts = { maxTokens: Number(el.maxTokens.value) || 64, temperature: Number(el.temperature.value) || 0, ignoreEos: el.ignoreEos.checked };
  running = new AbortController();
  setState('generating');
  el.output.textContent = '';
  el.output.removeAttribute('data-ids');
  el.stats.textContent = '';
  const chat = el.chat.checked;
  if (chat) {
    history.push({ role: 'user', content: prompt });
    const u = document.createElement('div');
    u.className = 'user';
    u.textContent = `you: ${prompt}`;
    el.log.append(u);
  }
  const stream = chat ? model.chat(history, { ...opts, signal: running.signal }) : model.generate(prompt, { ...opts, signal: running.signal });
  const t0 = performance.now();
  let first = 0;
  let n = 0;
  for (;;) {
    const r = await stream.next();
    if (r.done) {
      const res = r.value;
      el.output.dataset.ids = JSON.stringify(res.ids);
      el.output.dataset.tokens = String(res.ids.length);
      const rate = res.decodeTokensPerSecond || (n > 1 ? ((n - 1) * 1000) / (performance.now() - first) : 0);
      el.stats.textContent =
        `${res.ids.length} tokens, ${rate.toFixed(1)} tokens/s` +
        (res.prefillTokensPerSecond ? `, prompt ${res.promptTokens} tokens at ${res.prefillTokensPerSecond.toFixed(1)} tokens/s` : '') +
        `, finished: ${res.aborted ? 'cancelled' : res.finishReason}`;
      if (chat) {
        history.push({ role: 'assistant', content: res.text });
        const a = document.createElement('div');
        a.textContent = `model: ${res.text}`;
        el.log.append(a);
      }
      setState(res.aborted ? 'cancelled' : 'done');
      return;
    }
    if (r.value.token >= 0 && n++ === 0) first = performance.now();
    el.output.textContent += r.value.text;
    el.output.dataset.tokens = String(n);
    if (n > 1) el.stats.textContent = `${n} tokens, ${(((n - 1) * 1000) / (performance.now() - first)).toFixed(1)} tokens/s (first token after ${(first - t0).toFixed(0)} ms)`;
  }
}

async function search(): Promise<void> {
  if (!model) throw new Error('load a model first');
  const docs = el.docs.value.split('\n').map((d) => d.trim()).filter(Boolean);
  const query = el.query.value.trim();
  setState('searching');
  el.searchResults.textContent = '';
  el.searchResults.removeAttribute('data-ms');
  el.searchStats.textContent = 'searching…';
  const r = await searchDocuments(model, query, docs);
  for (const h of r.hits) {
    const li = document.createElement('li');
    li.dataset.testid = 'search-result';
    li.dataset.score = String(h.score);
    li.dataset.index = String(h.index);
    const score = document.createElement('span');
    score.className = 'score';
    score.textContent = h.score.toFixed(4);
    li.append(score, h.text);
    el.searchResults.append(li);
  }
  el.searchResults.dataset.ms = r.ms.toFixed(1);
  el.searchStats.textContent = `${docs.length} documents ranked by ${r.method === 'rerank' ? 'cross-encoder score' : 'cosine similarity'} in ${r.ms.toFixed(1)} ms`;
  setState('done');
}

const guard = (f: () => Promise<void>) => () =>
  f().catch((e) => {
    console.error(e);
    setState('error', errorText(e));
  });

el.load.addEventListener('click', guard(async () => load(chosenSource())));
el.generate.addEventListener('click', guard(generate));
el.search.addEventListener('click', guard(search));
el.query.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !el.search.disabled) guard(search)();
});
el.stop.addEventListener('click', () => running?.abort());
for (const [input, kind] of [
  [el.folder, 'folder'],
  [el.gguf, 'gguf'],
  [el.url, 'url'],
] as const) {
  input.addEventListener('change', () => ((document.querySelector(`input[name=source][value=${kind}]`) as HTMLInputElement).checked = true));
}
el.selftest.addEventListener(
  'click',
  guard(async () => {
    el.selftest.disabled = true;
    el.selftestTable.textContent = '';
    let done = 0;
    try {
      const r = await client.selfTest({
        filter: el.selftestFilter.value || undefined,
        onRow: (row) => {
          done++;
          el.selftestStatus.textContent = `${done} variants: ${row.variant} ${row.status}`;
          el.selftestTable.textContent += `${row.variant}  ${row.status}\n`;
        },
      });
      el.selftestTable.textContent = `adapter: ${r.adapter}\n${r.table}`;
      el.selftestStatus.textContent = `${r.rows.length} variants, ${r.rows.filter((x) => x.status === 'fail').length} failed`;
      el.selftestTable.dataset.done = 'true';
    } finally {
      el.selftest.disabled = false;
    }
  }),
);

client.device().then(
  (d) => {
    el.adapter.textContent = d.adapter;
    const a = d.adapterInfo;
    const sub = a.subgroupMinSize ? `; subgroup sizes ${a.subgroupMinSize}-${a.subgroupMaxSize}` : '';
    el.features.textContent = `features: ${d.features.join(', ') || 'none'}${sub}`;
    el.limits.textContent = Object.entries(d.limits).map(([k, v]) => `${k}: ${v}`).join('\n');
  },
  (e) => (el.adapter.textContent = `no WebGPU adapter: ${errorText(e)}`),
);

// Query string: ?model=default|URL&prompt=...&max_tokens=N&temperature=T&chat=1&ignore_eos=1&autorun=1
// (an embedding model: &query=...&docs=a|b|c)
const q = new URLSearchParams(location.search);
if (q.has('query')) el.query.value = q.get('query')!;
if (q.has('docs')) el.docs.value = q.get('docs')!.split('|').join('\n');
if (q.has('prompt')) el.prompt.value = q.get('prompt')!;
if (q.has('max_tokens')) el.maxTokens.value = q.get('max_tokens')!;
if (q.has('temperature')) el.temperature.value = q.get('temperature')!;
if (q.get('chat') === '1') el.chat.checked = true;
if (q.get('ignore_eos') === '1') el.ignoreEos.checked = true;
const qModel = q.get('model');
if (qModel && qModel !== 'default') {
  el.url.value = qModel;
  (document.querySelector('input[name=source][value=url]') as HTMLInputElement).checked = true;
}
if (q.get('autorun') === '1') {
  guard(async () => {
    await load(qModel && qModel !== 'default' ? qModel : defaultModelUrl());
    if (model?.kind === 'encoder') await search();
    else await generate();
  })();
} else setState('idle');
