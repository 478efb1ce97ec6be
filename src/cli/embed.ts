/** `tessera embed` and `tessera rerank`: encoders (BERT, XLM-R and their cross-encoders) from the command line. */
import type { Command } from 'commander';
import type { Pooling } from '../runtime/embed.ts';

interface EmbedFlags {
  model: string;
  text?: string[];
  ids?: string;
  pooling?: string;
  normalize?: boolean;
  json?: boolean;
}

interface RerankFlags {
  model: string;
  query: string;
  doc: string[];
  json?: boolean;
}

/** Whether `path` is an encoder folder (BERT, XLM-R and their cross-encoders) rather than a decoder (Qwen3-Embedding / -Reranker). */
export async function isEncoderFolder(path: string): Promise<boolean> {
  const { readFile } = await import('node:fs/promises');
  const { isEncoderConfig } = await import('../models/encoder.ts');
  try {
    return isEncoderConfig(JSON.parse(await readFile(`${path.replace(/\/+$/, '')}/config.json`, 'utf8')) as Record<string, unknown>);
  } catch {
    return false;
  }
}

async function open(path: string) {
  const { createDevice } = await import('../gpu/device.ts');
  const dev = await createDevice();
  try {
    if (await isEncoderFolder(path)) {
      const { loadEmbeddingModel } = await import('../runtime/embed.ts');
      return { dev, model: await loadEmbeddingModel(dev, path), decoder: undefined };
    }
    const { loadModel } = await import('../models/load.ts');
    return { dev, model: undefined, decoder: await loadModel(dev, path) };
  } catch (e) {
    dev.destroy();
    throw e;
  }
}

function parseIds(s: string): number[] {
  const ids = s.split(',').map((x) => x.trim());
  for (const x of ids) if (!/^\d+$/.test(x)) throw new Error(`--ids: "${x}" is not a token id (a comma-separated list of non-negative integers, e.g. 101,7592,102)`);
  return ids.map(Number);
}

export function registerEmbedCommands(program: Command): void {
  program
    .command('embed')
    .description('embeddings of texts (or one list of token ids) from an encoder folder (BertModel, XLMRobertaModel; sentence-transformers pooling) or a decoder (Qwen3-Embedding: last token)')
    .requiredOption('--model <path>', 'Hugging Face encoder folder (config.json, safetensors, tokenizer.json; modules.json and 1_Pooling/ when sentence-transformers made it)')
    .option('--text <text...>', 'texts to embed (one vector each)')
    .option('--ids <list>', 'one sequence of token ids, comma-separated')
    .option('--pooling <mode>', "mean | cls | last (default: the model's sentence-transformers configuration, else mean)")
    .option('--normalize', 'L2-normalize the vectors (default: when modules.json has a Normalize module)')
    .option('--no-normalize', 'do not normalize')
    .option('--json', 'print {"embeddings": [[...]], "dims": N}')
    .action(async (f: EmbedFlags) => {
      if (!f.text?.length && f.ids === undefined) throw new Error('embed: give --text (one or more) or --ids');
      if (f.text?.length && f.ids !== undefined) throw new Error('embed: give --text or --ids, not both');
      const { POOLINGS, embed } = await import('../runtime/embed.ts');
      if (f.pooling !== undefined && !POOLINGS.includes(f.pooling as Pooling)) throw new Error(`--pooling: "${f.pooling}" is not one of ${POOLINGS.join(', ')}`);
      const inputs = f.ids !== undefined ? [parseIds(f.ids)] : f.text!;
      const { dev, model, decoder } = await open(f.model);
      try {
        let vecs: Float32Array[];
        let how: string;
        if (decoder) {
          // a decoder (Qwen3-Embedding): the last token's final hidden state
          if (f.pooling !== undefined && f.pooling !== 'last') throw new Error(`--pooling ${f.pooling}: a decoder model (${decoder.config.architecture}) embeds with its last token only`);
          const { embedWithDecoder } = await import('../runtime/embed-decoder.ts');
          vecs = await embedWithDecoder(decoder, inputs, { normalize: f.normalize ?? true });
          how = `${decoder.config.architecture}, ${decoder.config.hiddenSize} dims, pooling last${(f.normalize ?? true) ? ', normalized' : ''}`;
        } else {
          const opts = { ...(f.pooling ? { pooling: f.pooling as Pooling } : {}), ...(f.normalize !== undefined ? { normalize: f.normalize } : {}) };
          vecs = await embed(model!, inputs, opts);
          how = `${model!.encoder.cfg.architecture}, ${model!.encoder.cfg.hidden} dims, pooling ${opts.pooling ?? model!.pooling}${(opts.normalize ?? model!.normalize) ? ', normalized' : ''}`;
        }
        const dims = vecs[0]!.length;
        if (f.json) console.log(JSON.stringify({ embeddings: vecs.map((v) => [...v]), dims }));
        else {
          console.log(how);
          vecs.forEach((v, i) => console.log(`[${i}] ${[...v.subarray(0, 8)].map((x) => x.toFixed(5)).join(' ')}${dims > 8 ? ' ...' : ''}  (norm ${Math.hypot(...v).toFixed(5)})`));
        }
      } finally {
        model?.destroy();
        decoder?.destroy();
        dev.destroy();
      }
    });

  program
    .command('rerank')
    .description('score documents for a query with a cross-encoder (BertForSequenceClassification, XLMRobertaForSequenceClassification) or a Qwen3-Reranker')
    .requiredOption('--model <path>', 'Hugging Face cross-encoder folder')
    .requiredOption('--query <text>', 'the query')
    .requiredOption('--doc <text...>', 'documents to score')
    .option('--json', 'print {"results": [{"index", "score", "logits"}]} in the order given')
    .action(async (f: RerankFlags) => {
      const { dev, model, decoder } = await open(f.model);
      try {
        let res: { index: number; score: number }[];
        if (decoder) {
          // a decoder (Qwen3-Reranker): P(yes) after its judging prompt
          const { rerankWithDecoder } = await import('../runtime/embed-decoder.ts');
          res = await rerankWithDecoder(decoder, f.query, f.doc);
        } else {
          const { rerank } = await import('../runtime/embed.ts');
          res = await rerank(model!, f.query, f.doc);
        }
        if (f.json) console.log(JSON.stringify({ results: res }));
        else for (const r of [...res].sort((a, b) => b.score - a.score)) console.log(`${r.score.toFixed(5)}  [${r.index}] ${f.doc[r.index]}`);
      } finally {
        model?.destroy();
        decoder?.destroy();
        dev.destroy();
      }
    });
}
