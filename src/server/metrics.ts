/** Server metrics in the Prometheus text format (counters, gauges and histograms; no client library needed). */

class Histogram {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(readonly buckets: readonly number[]) {
    this.counts = buckets.map(() => 0);
  }
  observe(v: number): void {
    this.sum += v;
    this.count++;
    this.buckets.forEach((b, i) => {
      if (v <= b) this.counts[i]!++;
    });
  }
  lines(name: string): string[] {
    const out = this.buckets.map((b, i) => `${name}_bucket{le="${b}"} ${this.counts[i]}`);
    out.push(`${name}_bucket{le="+Inf"} ${this.count}`, `${name}_sum ${this.sum}`, `${name}_count ${this.count}`);
    return out;
  }
}

export class Metrics {
  private readonly requests = new Map<string, number>();
  promptTokens = 0;
  completionTokens = 0;
  readonly ttft = new Histogram([0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]);
  readonly itl = new Histogram([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]);

  request(endpoint: string, status: number): void {
    const k = `endpoint="${endpoint}",status="${status}"`;
    this.requests.set(k, (this.requests.get(k) ?? 0) + 1);
  }

  render(gauges: { queueDepth: number; running: number }): string {
    const lines = [
      '# HELP tessera_requests_total HTTP requests by endpoint and status.',
      '# TYPE tessera_requests_total counter',
      ...[...this.requests].map(([k, v]) => `tessera_requests_total{${k}} ${v}`),
      '# HELP tessera_prompt_tokens_total Prompt tokens processed.',
      '# TYPE tessera_prompt_tokens_total counter',
      `tessera_prompt_tokens_total ${this.promptTokens}`,
      '# HELP tessera_completion_tokens_total Tokens generated.',
      '# TYPE tessera_completion_tokens_total counter',
      `tessera_completion_tokens_total ${this.completionTokens}`,
      '# HELP tessera_queue_depth Requests waiting for the engine.',
      '# TYPE tessera_queue_depth gauge',
      `tessera_queue_depth ${gauges.queueDepth}`,
      '# HELP tessera_requests_running Requests the engine is serving.',
      '# TYPE tessera_requests_running gauge',
      `tessera_requests_running ${gauges.running}`,
      '# HELP tessera_time_to_first_token_seconds From the request to its first generated token.',
      '# TYPE tessera_time_to_first_token_seconds histogram',
      ...this.ttft.lines('tessera_time_to_first_token_seconds'),
      '# HELP tessera_inter_token_latency_seconds Between consecutive generated tokens of a request.',
      '# TYPE tessera_inter_token_latency_seconds histogram',
      ...this.itl.lines('tessera_inter_token_latency_seconds'),
    ];
    return lines.join('\n') + '\n';
  }
}
