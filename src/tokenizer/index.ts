/** Tokenizers: tokenizer.json and GGUF vocabularies, streaming decode, chat templates. */
export * from './types.ts';
export * from './tokenizer.ts';
export * from './stream.ts';
export * from './chat-template.ts';
export * from './gguf-vocab.ts';
