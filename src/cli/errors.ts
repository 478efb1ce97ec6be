/** A malformed command-line argument (exit code 1); the message starts with the flag and says what is expected. */
export class CliArgumentError extends Error {
  override name = 'CliArgumentError';
}
