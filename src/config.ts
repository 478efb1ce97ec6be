/**
 * The one place environment variables are read.
 *   TESSERA_DAWN_ARGS / WEBGPU_DAWN_ARGS  comma/space separated Dawn options passed to create([...]),
 *                                         e.g. "enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia"
 *   VK_ICD_FILENAMES / VK_DRIVER_FILES    Vulkan driver selection (read to decide whether to look for SwiftShader)
 *   TESSERA_SWIFTSHADER_ICD               path of SwiftShader's Vulkan ICD json (default: Debian chromium's)
 *   TESSERA_TIMESTAMPS=1                  record per-dispatch GPU timestamps where the device supports it
 *   TESSERA_DAWN_CHECKED=1                keep Dawn's validation and robustness on a hardware GPU (off by default there)
 *   TESSERA_GPU_WAIT=poll|sleep           how the token loop waits for the GPU (default sleep: block the thread for
 *                                         most of the expected step time instead of spinning the event loop)
 *   TESSERA_DECODE_DEPTH=N                decode steps queued ahead of the token being read back (default 2, 1..4):
 *                                         more hides host and readback jitter, each costs one speculative step at the end
 *   TESSERA_DECODE_BATCH=N                decode steps recorded into one submit (default 1, 1..4; the depth is
 *                                         raised to N): fewer submits a token; a token is read back when its batch is done
 *   TESSERA_API_KEY                       the key `tessera serve` requires when --api-key is not given
 *   TESSERA_TUNABLES                      JSON {"<op contract>": {"<tunable>": value}}: tunables the models' op calls
 *                                         resolve with, e.g. {"linear": {"prefillSgmat": "on"}} (benchmarks, trials)
 */
const env: Record<string, string | undefined> = typeof process !== 'undefined' && process.env ? process.env : {};

export interface TesseraConfig {
  dawnArgs: string[] | undefined;
  vulkanDriverSet: boolean;
  swiftShaderIcd: string;
  timestamps: boolean;
  gpuWait: 'poll' | 'sleep';
  decodeDepth: number;
  decodeBatch: number;
  dawnChecked: boolean;
  tunables: Record<string, Record<string, string | number | boolean>>;
  apiKey: string | undefined;
}

function parseTunables(s: string | undefined): TesseraConfig['tunables'] {
  if (!s) return {};
  let v: unknown;
  try {
    v = JSON.parse(s);
  } catch (e) {
    throw new Error(`TESSERA_TUNABLES is not JSON (${(e as Error).message}); use e.g. {"linear": {"prefillSgmat": "on"}}`);
  }
  const ok = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
  if (!ok(v) || !Object.values(v).every(ok)) throw new Error('TESSERA_TUNABLES must map op contract names to objects of tunables, e.g. {"linear": {"prefillSgmat": "on"}}');
  return v as TesseraConfig['tunables'];
}

let tunablesSeen: { raw: string | undefined; parsed: TesseraConfig['tunables'] } | undefined;

/** TESSERA_TUNABLES parsed, once per value of the variable. */
function currentTunables(): TesseraConfig['tunables'] {
  const raw = env.TESSERA_TUNABLES;
  if (!tunablesSeen || tunablesSeen.raw !== raw) tunablesSeen = { raw, parsed: parseTunables(raw) };
  return tunablesSeen.parsed;
}

/**
 * The tunables TESSERA_TUNABLES sets for one op contract (readConfig().tunables[op] without reading the rest of the
 * configuration): asked on every op plan, so it must be cheap.
 */
export function opTunables(op: string): TesseraConfig['tunables'][string] | undefined {
  const all = currentTunables();
  return Object.hasOwn(all, op) ? all[op] : undefined;
}

function parseSmall(name: string, s: string | undefined, dflt: number): number {
  if (s === undefined || s === '') return dflt;
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1 || n > 4) throw new Error(`${name} must be an integer from 1 to 4, got ${JSON.stringify(s)}`);
  return n;
}

function splitDawnArgs(s: string): string[] {
  // "enable-dawn-features=a,b disable-dawn-features=c" -> one entry per key=value; commas stay inside values.
  return s.split(/\s+|;/).map((x) => x.trim()).filter(Boolean);
}

export function readConfig(): TesseraConfig {
  const dawn = env.TESSERA_DAWN_ARGS ?? env.WEBGPU_DAWN_ARGS;
  return {
    dawnArgs: dawn !== undefined ? splitDawnArgs(dawn) : undefined,
    vulkanDriverSet: Boolean(env.VK_ICD_FILENAMES || env.VK_DRIVER_FILES),
    swiftShaderIcd: env.TESSERA_SWIFTSHADER_ICD ?? '/usr/lib/chromium/vk_swiftshader_icd.json',
    timestamps: env.TESSERA_TIMESTAMPS === '1',
    gpuWait: env.TESSERA_GPU_WAIT === 'poll' ? 'poll' : 'sleep',
    decodeDepth: parseSmall('TESSERA_DECODE_DEPTH', env.TESSERA_DECODE_DEPTH, 2),
    decodeBatch: parseSmall('TESSERA_DECODE_BATCH', env.TESSERA_DECODE_BATCH, 1),
    dawnChecked: env.TESSERA_DAWN_CHECKED === '1',
    tunables: currentTunables(),
    apiKey: env.TESSERA_API_KEY || undefined,
  };
}

/** Set an environment variable for native libraries loaded later in this process (Vulkan loader). */
export function setProcessEnv(name: string, value: string): void {
  if (typeof process !== 'undefined' && process.env) process.env[name] = value;
}
