/** Weight files: safetensors checkpoints, GGUF, half-precision and ggml block codecs. */
export * from './errors.ts';
export * from './f16.ts';
export * from './safetensors.ts';
export * from './checkpoint.ts';
export * from './gguf.ts';
export * from './gguf-writer.ts';
export * from './quant/index.ts';
