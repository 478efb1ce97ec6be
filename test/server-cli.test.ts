/**
 * `tessera serve` as a process: it prints where it listens (port 0 picks a free one), answers, and on SIGTERM lets
 * the running request finish, refuses new ones with 503, and exits 0.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('tessera serve (process)', () => {
  it('drains on SIGTERM and exits 0', async () => {
    const p = spawn(process.execPath, ['bin/tessera.mjs', 'serve', '--port', '0', '--ctx', '256'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    const url = await new Promise<string>((resolve, reject) => {
      p.stderr.on('data', (d: Buffer) => {
        err += d.toString();
        const m = err.match(/on (http:\/\/127\.0\.0\.1:\d+)\/v1/);
        if (m) resolve(m[1]!);
      });
      p.on('exit', (code) => reject(new Error(`exited ${code} before listening:\n${err}`)));
    });
    const exited = new Promise<number | null>((r) => p.on('exit', (code) => r(code)));
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'In the beginning' }], max_tokens: 40, temperature: 0, stream: true }),
    });
    const reader = res.body!.getReader();
    await reader.read();
    p.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    const refused = await fetch(`${url}/v1/models`).then((r) => r.status, () => 'closed');
    // /v1/models does not queue; a generation request during the drain is refused
    const gen = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'default', prompt: 'Amen', max_tokens: 1 }) }).then(
      (r) => r.status,
      () => 'closed',
    );
    expect([200, 'closed']).toContain(refused);
    expect([503, 'closed']).toContain(gen);
    let text = new TextDecoder().decode((await reader.read()).value);
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);
    expect(await exited).toBe(0);
    expect(err).toMatch(/SIGTERM: finishing 1 request/);
  }, 60_000);
});
