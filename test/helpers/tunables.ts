/** Runs `f` with TESSERA_TUNABLES set to `tunables` (an object, written as JSON), then puts the variable back as it was. */
export async function withTunables<T>(tunables: object, f: () => T | Promise<T>): Promise<T> {
  const saved = process.env.TESSERA_TUNABLES;
  process.env.TESSERA_TUNABLES = JSON.stringify(tunables);
  try {
    return await f();
  } finally {
    if (saved === undefined) delete process.env.TESSERA_TUNABLES;
    else process.env.TESSERA_TUNABLES = saved;
  }
}
