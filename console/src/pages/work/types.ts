import type { Operations } from '../../api/types.generated.ts'

/* The API's records the work pages read, named from the generated operation types. */
type Res<K extends keyof Operations> = Operations[K]['response']
type Body<K extends keyof Operations> = Operations[K]['body']

export type Chat = Res<'chats.get'>
export type ChatSummary = Res<'chats.create'>
export type StoredMessage = Chat['messages'][number]
export type PendingApproval = Chat['pending_approvals'][number]
export type Agent = Res<'agents.get'>
export type AgentBody = Body<'agents.create'>
export type FunctionRecord = Res<'functions.get'>
export type ExecuteResult = Res<'functions.execute'>
export type Execution = Res<'executions.get'>
export type QueueStats = Res<'queue.stats'>
export type Collection = Res<'collections.get'>
export type FileRecord = Res<'files.info'>
export type Named = { namespace: string; name: string }
