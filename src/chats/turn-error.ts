/** A turn's failure with the code its stream's `error` event carries. */
export class TurnError extends Error {
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.code = code
  }
}

/** The `error` event that ends a cancelled turn's stream (by its worker, or by the cancel when no worker ran it). */
export const TURN_CANCELLED = { detail: 'the turn was cancelled', code: 'chat.turn_cancelled' } as const
