/**
 * DeviceCaps: the capabilities of a WebGPU device, shaped exactly like the `device` namespace that
 * contract expressions read: `device.limits.X`, `device.features.has("x")`, `device.adapterInfo.X`.
 * A device profile file (../spec/device-profiles/*.json) is the same shape with `features` as an array.
 */
export interface SubgroupMatrixConfig {
  componentType: string;
  resultComponentType: string;
  M: number;
  N: number;
  K: number;
}

export interface AdapterInfoCaps {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  subgroupMinSize?: number;
  subgroupMaxSize?: number;
  subgroupMatrixConfigs: SubgroupMatrixConfig[];
}

export interface DeviceCaps {
  features: ReadonlySet<string>;
  limits: Readonly<Record<string, number>>;
  adapterInfo: AdapterInfoCaps;
}

/** The JSON form (`tessera devices --json`, device profile files). */
export interface DeviceProfileJson {
  features: string[];
  limits: Record<string, number>;
  adapterInfo: AdapterInfoCaps;
}

export function capsToJson(caps: DeviceCaps): DeviceProfileJson {
  return {
    adapterInfo: caps.adapterInfo,
    features: [...caps.features].sort(),
    limits: { ...caps.limits },
  };
}

export function capsFromJson(json: DeviceProfileJson, source = 'device profile'): DeviceCaps {
  if (!json || typeof json !== 'object') throw new Error(`${source}: expected an object with features, limits, adapterInfo`);
  if (!Array.isArray(json.features)) throw new Error(`${source}: field "features" must be an array of feature names`);
  if (!json.limits || typeof json.limits !== 'object') throw new Error(`${source}: field "limits" must be an object of numbers`);
  for (const [k, v] of Object.entries(json.limits)) {
    if (typeof v !== 'number') throw new Error(`${source}: limits.${k} must be a number, got ${JSON.stringify(v)}`);
  }
  const ai = json.adapterInfo ?? ({} as AdapterInfoCaps);
  return {
    features: new Set(json.features),
    limits: { ...json.limits },
    adapterInfo: {
      vendor: ai.vendor ?? '',
      architecture: ai.architecture ?? '',
      device: ai.device ?? '',
      description: ai.description ?? '',
      ...(ai.subgroupMinSize !== undefined ? { subgroupMinSize: ai.subgroupMinSize } : {}),
      ...(ai.subgroupMaxSize !== undefined ? { subgroupMaxSize: ai.subgroupMaxSize } : {}),
      subgroupMatrixConfigs: ai.subgroupMatrixConfigs ?? [],
    },
  };
}
