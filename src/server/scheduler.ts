/**
 * Request scheduling: a FIFO queue in front of the engine, one request running at a time (batching comes with the
 * engine's multi-sequence step). A full queue refuses with 429 and Retry-After; while draining (SIGTERM) new
 * requests get 503 and the running and queued ones finish.
 */
import { ApiError } from './openai.ts';

interface Waiter {
  resolve: (release: () => void) => void;
  reject: (e: Error) => void;
}

export class Scheduler {
  private readonly waiting: Waiter[] = [];
  private busy = false;
  private draining = false;
  private idle: (() => void)[] = [];

  constructor(readonly maxQueue: number) {}

  /** Requests waiting (not counting the one running). */
  get depth(): number {
    return this.waiting.length;
  }

  get running(): number {
    return this.busy ? 1 : 0;
  }

  /** Wait for the engine; call the returned function exactly once when done with it. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (this.draining) return Promise.reject(new ApiError(503, 'The server is shutting down; retry against another instance', 'server_error', null, 'shutting_down'));
    if (!this.busy) {
      this.busy = true;
      return Promise.resolve(this.releaser());
    }
    if (this.waiting.length >= this.maxQueue) {
      return Promise.reject(
        new ApiError(429, `The server is busy: ${this.waiting.length} requests are already waiting (--max-queue ${this.maxQueue}); retry later`, 'rate_limit_error', null, 'queue_full', { 'Retry-After': '1' }),
      );
    }
    return new Promise((resolve, reject) => {
      const w: Waiter = { resolve, reject };
      this.waiting.push(w);
      signal?.addEventListener('abort', () => {
        const i = this.waiting.indexOf(w);
        if (i >= 0) {
          this.waiting.splice(i, 1);
          reject(new ApiError(499, 'The client went away while the request was queued', 'invalid_request_error', null, 'client_closed'));
        }
      });
    });
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiting.shift();
      if (next) next.resolve(this.releaser());
      else {
        this.busy = false;
        for (const f of this.idle.splice(0)) f();
      }
    };
  }

  /** Refuse new requests from now on; resolves when the running and queued ones are done. */
  drain(): Promise<void> {
    this.draining = true;
    if (!this.busy) return Promise.resolve();
    return new Promise((r) => this.idle.push(r));
  }
}
