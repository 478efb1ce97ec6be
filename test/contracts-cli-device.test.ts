import { describe, expect, it, vi } from 'vitest';
import { h200 } from './contracts-helpers.ts';

// Without --device-profile the command asks src/gpu/device.ts for the real device. Mocked here so the
// test is deterministic on every machine; the real-device path is exercised by the GPU lane.
const destroy = vi.fn();
vi.mock('../src/gpu/device.ts', () => ({ createDevice: vi.fn(async () => ({ caps: h200, destroy })) }));

describe('contract plan without --device-profile', () => {
  it('plans for createDevice().caps and destroys the device', async () => {
    const { contractPlan } = await import('../src/cli/contract.ts');
    const { createDevice } = await import('../src/gpu/device.ts');
    const { QMOE_PATH } = await import('./contracts-helpers.ts');
    const r = await contractPlan({
      contract: QMOE_PATH,
      shapes: 'inputT=128x2880,routerT=128x32,fc1T=32x5760x1440,fc1ScalesT=32x5760,fc2T=32x2880x1440,fc2ScalesT=32x2880',
      attrs: 'k=4,activation_type=swiglu,swiglu_fusion=1',
    });
    expect(createDevice).toHaveBeenCalledTimes(1);
    expect(destroy).toHaveBeenCalledTimes(1);
    expect(r.plan.device).toBe('nvidia-h200 (nvidia)');
    expect(r.json.variant).toBe('quant_grouped_routed');
  });
});
