/**
 * Semantic search over a loaded embedding model in the worker (the demo's search panel): a bi-encoder ranks documents
 * by the cosine similarity of their embeddings to the query's (one embed() call for the query and every document,
 * pooled as the model's folder configures); a cross-encoder (*ForSequenceClassification) ranks them by rerank()'s
 * scores. Results come best first; ties keep the documents' order.
 */
import type { RemoteModel } from './client.ts';
import { ModelKindError } from './protocol.ts';

export interface SearchHit {
  /** Position of the document in the list given. */
  index: number;
  text: string;
  /** Cosine similarity (bi-encoder) or the cross-encoder's score. */
  score: number;
}

export interface SearchResult {
  hits: SearchHit[];
  /** How the scores were made. */
  method: 'cosine' | 'rerank';
  /** Wall time of the worker round trip (embed or rerank), in milliseconds. */
  ms: number;
}

/** Cosine similarity of two vectors (in float64); 0 when either is all zeros. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new RangeError(`cosine: vectors of ${a.length} and ${b.length} dimensions`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na > 0 && nb > 0 ? dot / (Math.sqrt(na) * Math.sqrt(nb)) : 0;
}

/** Rank `documents` for `query` with an embedding model (info.kind 'encoder'). */
export async function searchDocuments(model: RemoteModel, query: string, documents: readonly string[]): Promise<SearchResult> {
  const e = model.info.embedding;
  if (model.info.kind !== 'encoder' || !e) throw new ModelKindError('search', model.info.path, `is a decoder for generation (${model.info.architecture}): semantic search needs an embedding model`);
  if (!query) throw new RangeError('search: the query is empty');
  if (!documents.length) throw new RangeError('search: no documents (one per line)');
  const t0 = performance.now();
  let scores: number[];
  if (e.reranker) {
    const r = await model.rerank(query, documents);
    scores = r.map((x) => x.score);
  } else {
    const [q, ...d] = await model.embed([query, ...documents]);
    scores = d.map((v) => cosine(q!, v));
  }
  const ms = performance.now() - t0;
  const hits = documents.map((text, index) => ({ index, text, score: scores[index]! })).sort((a, b) => b.score - a.score || a.index - b.index);
  return { hits, method: e.reranker ? 'rerank' : 'cosine', ms };
}
