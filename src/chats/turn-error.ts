/** A turn's failure with the code its stream's `error` event carries. */
export class TurnError extends Error {
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.code = code
  }
}
