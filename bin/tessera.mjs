#!/usr/bin/env node
// The `tessera` command: runs the TypeScript CLI through tsx's loader (no build step).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
