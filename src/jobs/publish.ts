/* The durable publish lives with the other shared JetStream helpers; the job modules import it from here. */
export { publishDurably } from '../platform/jetstream.ts'
