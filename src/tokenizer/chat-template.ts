/**
 * Chat templates: the Jinja `chat_template` of tokenizer_config.json (or chat_template.jinja /
 * GGUF `tokenizer.chat_template`), rendered with @huggingface/jinja the way transformers'
 * apply_chat_template does: `messages`, `add_generation_prompt`, the special tokens, `tools`, plus
 * any extra variables (`raise_exception` and `strftime_now` are built into @huggingface/jinja).
 */

import { Template } from '@huggingface/jinja';
import { ChatTemplateError } from '../formats/errors.ts';
import type { ChatMessage } from './types.ts';

export interface ChatTemplateOptions {
  /** Append the assistant turn header so the model continues as the assistant. Default false. */
  addGenerationPrompt?: boolean;
  /** Tool definitions (JSON schema objects), exposed to the template as `tools`. */
  tools?: unknown[];
  /** Documents for retrieval-augmented templates, exposed as `documents`. */
  documents?: unknown[];
  /** Further template variables (e.g. `enable_thinking`). */
  extra?: Record<string, unknown>;
}

export interface ChatTemplateTokens {
  bos_token?: string;
  eos_token?: string;
  unk_token?: string;
  pad_token?: string;
}

export class ChatTemplate {
  private readonly template: Template;

  /** `origin` names where the template came from, for error messages. */
  constructor(
    readonly source: string,
    readonly origin: string,
    private readonly tokens: ChatTemplateTokens,
  ) {
    try {
      this.template = new Template(source);
    } catch (err) {
      throw new ChatTemplateError({
        file: origin,
        field: 'chat_template',
        problem: `does not parse as Jinja: ${(err as Error).message}`,
      });
    }
  }

  render(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
    const vars: Record<string, unknown> = {
      ...this.tokens,
      messages,
      add_generation_prompt: options.addGenerationPrompt ?? false,
      ...(options.tools ? { tools: options.tools } : {}),
      ...(options.documents ? { documents: options.documents } : {}),
      ...options.extra,
    };
    try {
      return this.template.render(vars);
    } catch (err) {
      // raise_exception('...') (a built-in of @huggingface/jinja) lands here with its message.
      throw new ChatTemplateError({
        file: this.origin,
        field: 'chat_template',
        problem: `failed to render: ${(err as Error).message}`,
        fix: 'Check the messages (roles, alternation) against what this template accepts',
      });
    }
  }
}
