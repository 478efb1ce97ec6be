/**
 * ExprError: a parse or evaluation error in a contract expression. It carries the expression text,
 * the character offset (0-based) of the offending token, and, once known, the name of the thing being
 * evaluated (e.g. `derive.groupSlots`). The message ends with the expression and a caret line:
 *
 *   derive.groupSlots: unknown name "foo" at 20
 *     hiddenChunkTokens * foo
 *                         ^
 */
export class ExprError extends Error {
  override name = 'ExprError';
  /** The bare problem, without context, position or caret. */
  readonly detail: string;
  readonly expr: string;
  readonly pos: number;
  /** What was being evaluated, e.g. `derive.groupSlots` or `variants.quant_split_routed.when[2]`. */
  context: string | undefined;

  constructor(detail: string, expr: string, pos: number, context?: string) {
    super(detail);
    this.detail = detail;
    this.expr = expr;
    this.pos = Math.max(0, Math.min(pos, expr.length));
    this.context = context;
    this.message = this.format();
  }

  /** Sets the context if none is set yet (the innermost named evaluation wins); returns this. */
  withContext(context: string): this {
    if (this.context === undefined) {
      this.context = context;
      this.message = this.format();
    }
    return this;
  }

  /** One line, no caret: `derive.groupSlots: unknown name "foo" at 20`. */
  get summary(): string {
    return `${this.context ? `${this.context}: ` : ''}${this.detail} at ${this.pos}`;
  }

  private format(): string {
    return `${this.summary}\n  ${this.expr}\n  ${' '.repeat(this.pos)}^`;
  }
}
