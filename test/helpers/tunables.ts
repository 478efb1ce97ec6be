/**
 * For a test file (or a describe) that switches TESSERA_TUNABLES between calls: `set(t)` writes `t` (an object, as
 * JSON); `restore()` puts the variable back as it was when tunablesSwitch() ran (hand it to afterAll or afterEach).
 */
export function tunablesSwitch(): { set(tunables: object): void; restore(): void } {
  const saved = process.env.TESSERA_TUNABLES;
  return {
    set(tunables) {
      process.env.TESSERA_TUNABLES = JSON.stringify(tunables);
    },
    restore() {
      if (saved === undefined) delete process.env.TESSERA_TUNABLES;
      else process.env.TESSERA_TUNABLES = saved;
    },
  };
}

/** Runs `f` with TESSERA_TUNABLES set to `tunables` (an object, written as JSON), then puts the variable back as it was. */
export async function withTunables<T>(tunables: object, f: () => T | Promise<T>): Promise<T> {
  const sw = tunablesSwitch();
  sw.set(tunables);
  try {
    return await f();
  } finally {
    sw.restore();
  }
}
