/** Device capabilities for CLI commands: the real device, or a device profile file (--device-profile). */
import { readFileSync } from 'node:fs';
import { CliArgumentError } from './errors.ts';
import { capsFromJson, type DeviceCaps, type DeviceProfileJson } from '../gpu/caps.ts';

export async function loadCaps(profile?: string): Promise<{ caps: DeviceCaps; close: () => void }> {
  if (profile) {
    let json: DeviceProfileJson;
    try {
      json = JSON.parse(readFileSync(profile, 'utf8')) as DeviceProfileJson;
    } catch (e) {
      throw new CliArgumentError(`--device-profile ${profile}: ${(e as Error).message}`);
    }
    return { caps: capsFromJson(json, `device profile ${profile}`), close: () => {} };
  }
  const { createDevice } = await import('../gpu/device.ts');
  const dev = await createDevice();
  return { caps: dev.caps, close: () => dev.destroy() };
}
