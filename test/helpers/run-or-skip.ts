import { ContractError } from '../../src/contracts/index.ts';
import { runContract } from '../../src/contracts/run.ts';
import type { TesseraDevice } from '../../src/gpu/device.ts';
import { opContract } from '../../src/selftest/launch.ts';

/**
 * Run op `op` through its contract, or skip the test (saying why) where every variant that would apply is refused
 * for what the device lacks (a feature): the GPU lane runs it. Any other refusal throws.
 */
export async function runOpOrSkip(dev: TesseraDevice, op: string, req: Parameters<typeof runContract>[2], ctx: { skip: (why: string) => void }) {
  try {
    return await runContract(dev, opContract(op), req);
  } catch (e) {
    if (e instanceof ContractError && e.rejected.every((x) => x.kind === 'requires')) {
      ctx.skip(`${op} does not run here (${e.rejected.map((x) => x.reason).join('; ')}); the GPU lane runs it`);
      return undefined;
    }
    throw e;
  }
}
