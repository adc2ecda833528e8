import { uuidV5 } from '../kernel/uuid.ts'

/*
 * Job ids are UUIDs (the executions table, JobState), so the job of one schedule tick gets the
 * UUID v5 (src/kernel/uuid.ts) of `sched:<schedule id>:<tick epoch ms>`: every host that fires the
 * same tick enqueues the same job id, and the job system keeps one — JOBS drops a repeated
 * `Nats-Msg-Id` within its duplicate window (10 min), and later a claim finds the existing
 * JOB_STATE entry (kept 24 h) and does not run it again.
 */
export const tickName = (scheduleId: string, tickMs: number): string => `sched:${scheduleId}:${String(tickMs)}`
export const tickJobId = (scheduleId: string, tickMs: number): string => uuidV5(tickName(scheduleId, tickMs))
