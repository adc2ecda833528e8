import { randomUUID } from 'node:crypto'
import type { JetStreamClient } from '@nats-io/jetstream'
import { can, type Principal } from '../auth/principal.ts'
import { permissionSet } from '../feature/permissions.ts'
import { AppError, invalid, notFound } from '../kernel/errors.ts'
import type { Config } from '../kernel/config.ts'
import type { Logger } from '../kernel/log.ts'
import type { Db } from '../platform/db.ts'
import type { NatsConnection } from '../platform/nats.ts'
import type { NatsNames } from '../platform/nats-names.ts'
import { agentKind } from '../kinds/agent/kind.ts'
import type { JobStateStore } from '../jobs/job-state.ts'
import { jobErrorOf, jobErrorText } from '../jobs/job-state.ts'
import { waitForJob, watchJob, type JobWatch } from '../jobs/wait.ts'
import { validateAgainst } from '../kernel/json-schema.ts'
import { canOnResource } from '../resources/permissions.ts'
import type { ResourceRecord, ResourceService } from '../resources/service.ts'
import { sendToActor } from '../../actors/runtime/send.ts'
import type { ActorTeller } from '../../actors/runtime/tell.ts'
import { chatProtocol } from '../../actors/protocols/chat.ts'
import { chatStore, type ChatRow, type MessageRow } from './store.ts'
import type { TurnResult } from './turn.ts'
import { EVENT_HEADER, newChannelId, sseLiveSubject } from '../streaming/channel.ts'
import { budgetExhausted, dailyBudget } from '../usage/budget.ts'
import { traceparentField } from '../platform/tracing.ts'

/*
 * The chat service: what the chat endpoints (handlers.ts) and the features that speak in chats
 * (schedules, components, the OpenAI adapter) share. A chat is its owner's: anyone else gets 404
 * (admins holding platform.chats.read:all / update:all excepted). Sending a message hands the turn
 * to the chat's actor (per-chat order) under a job id chosen here, then waits on that job's done
 * channel.
 */
/** The permissions this module checks, for the reference (its feature contributes the list). */
export const chatPermissions = permissionSet()

const READ_ALL = chatPermissions.add('platform.chats.read:all', "Chats: read every user's chats (admin)")
const UPDATE_ALL = chatPermissions.add(
  'platform.chats.update:all',
  "Chats: archive or delete every user's chats (admin)",
)

export interface ChatHandlerDeps {
  db: Db
  nc: NatsConnection
  js: JetStreamClient
  names: NatsNames
  config: Config
  resources: ResourceService
  jobStore: JobStateStore
  /**
   * The actor host of this process, when it runs one: a message to a chat whose partition it
   * works is told in-process (actors/runtime/tell.ts, `tellDurably`), answered once committed.
   */
  actorsHere?: ActorTeller
  log?: Logger
}

/** What sending in a chat needs of it. */
type ChatRef = Pick<ChatRow, 'id'>

/** Chat owners remembered per process (see `speakIn`). */
const OWNERS_KEPT = 10_000

export interface SendOptions {
  content?: string
  approval?: { tool_call_id: string; approved: boolean }
  channelId: string | null
  /** The chat was made by this request just now: its actor starts without reading its state (`sendToActor`'s `fresh`). */
  fresh?: boolean
  /**
   * False: the turn's stream is not recorded as the chat's current one, since nobody can resume
   * it through the chat (an internal chat: the adapter relays the stream itself).
   */
  resumable?: boolean
}

export function chatService(d: ChatHandlerDeps) {
  const store = chatStore(d.db)
  const budget = dailyBudget(d.db, d.config.USAGE_DAILY_TOKEN_BUDGET)

  const agentFor = async (p: Principal, namespace: string, name: string): Promise<ResourceRecord> => {
    const agent = await d.resources.get(p, agentKind, { namespace, name }).catch((err: unknown) => {
      if (err instanceof AppError && err.status === 404) return null
      throw err
    })
    if (
      agent === null ||
      !canOnResource(p, agentKind, 'chat', { namespace, name, ownerId: (agent['owner_id'] as string | null) ?? null })
    )
      throw notFound(`agent ${namespace}/${name} not found`, 'resource.not_found')
    return agent
  }

  const chatOf = async (p: Principal, id: string, write = false): Promise<ChatRow> => {
    const chat = await store.get(id)
    if (chat === null || chat.internal || (chat.user_id !== p.userId && !can(p, write ? UPDATE_ALL : READ_ALL)))
      throw notFound(`chat ${id} not found`, 'chat.not_found')
    return chat
  }

  /*
   * The chats this process has seen their owners speak in: a chat's owner and whether it is
   * internal never change, so a message from the owner again needs no read at the door (one
   * Postgres round trip fewer per turn). A chat deleted or expired since is what the turn's own
   * read finds (`chat.not_found`), answered 404 like the door's check (`result`).
   */
  const owners = new Map<string, string>()

  /** A chat the caller speaks in: its own (admins may read others' chats, never speak in them). */
  const ownChat = async (p: Principal, id: string): Promise<ChatRow> => {
    const chat = await chatOf(p, id)
    if (chat.user_id !== p.userId) throw notFound(`chat ${chat.id} not found`, 'chat.not_found')
    owners.set(chat.id, chat.user_id)
    if (owners.size > OWNERS_KEPT) owners.delete(owners.keys().next().value as string)
    return chat
  }

  /** A chat the caller speaks in, from memory when its owner spoke in it before. */
  const speakIn = async (p: Principal, id: string): Promise<ChatRef> =>
    owners.get(id) === p.userId ? { id } : ownChat(p, id)

  const checkedInput = (agent: ResourceRecord, given: Record<string, unknown> | undefined): Record<string, unknown> => {
    const input = given ?? {}
    const issues = validateAgainst((agent['input_schema'] ?? {}) as Record<string, unknown>, input, '/input')
    if (issues.length > 0) throw invalid("input does not match the agent's input_schema", issues, 'chat.invalid_input')
    return input
  }

  const createChat = async (
    p: Principal,
    agent: ResourceRecord,
    o: {
      input?: Record<string, unknown>
      title?: string | null
      expiresIn?: number | null
      sessionKey?: string | null
    },
  ): Promise<ChatRow> => {
    const input = checkedInput(agent, o.input)
    return store.create({
      userId: p.userId,
      agent: { id: agent.id, namespace: String(agent['namespace']), name: agent.name },
      input,
      title: o.title ?? null,
      expiresIn: o.expiresIn ?? null,
      sessionKey: o.sessionKey ?? null,
    })
  }

  /** The session's chat, made with `input` when there is none (see `openSession`: concurrent first calls share one). */
  const openSession = async (
    p: Principal,
    agent: ResourceRecord,
    sessionKey: string,
    input: Record<string, unknown> | undefined,
  ): Promise<{ chat: ChatRow; created: boolean }> =>
    store.openSession({
      userId: p.userId,
      agent: { id: agent.id, namespace: String(agent['namespace']), name: agent.name },
      input: checkedInput(agent, input),
      sessionKey,
    })

  /**
   * Queues a turn with the chat's actor under `jobId` (chosen by the caller, e.g. a schedule tick's
   * deterministic id: a repeated send of the same job is dropped by the stream's duplicate check).
   */
  const queue = async (p: Principal, chat: ChatRef, o: SendOptions, jobId: string): Promise<void> => {
    // the daily token budget at the door (429 before anything is queued); the turn checks it again
    // when it starts (run-turn.ts), for what was queued before the budget ran out
    await budget.check(p.userId)
    // The chat's current stream is recorded alongside the send, not before it: the turn never
    // reads it, and whoever resumes the stream learns its id from this request's answer. Should
    // it fail once the message is accepted, the message stands (an error would have the client
    // send it twice); only resuming that stream then finds nothing.
    const recorded =
      o.channelId === null || o.resumable === false
        ? null
        : store
            .setChannel(chat.id, o.channelId)
            .catch((err: unknown) =>
              d.log?.warn({ err, chat: chat.id }, "recording the chat's stream failed: it cannot be resumed"),
            )
    const turn = {
      job_id: jobId,
      ...(o.content === undefined ? {} : { content: o.content }),
      ...(o.approval === undefined ? {} : { approval: o.approval }),
      channel_id: o.channelId,
      user_id: p.userId,
      pool: 'agent' as const,
      ...traceparentField(),
    }
    const opts = { msgId: `chat-send-${jobId}`, fresh: o.fresh === true }
    // the chat's actor in this process (the usual single-node case): no stream write, publish, delivery or ack
    await (d.actorsHere?.tellDurably(chatProtocol, chat.id, 'send', turn, opts) ??
      sendToActor(d.js, d.names, chatProtocol, chat.id, 'send', turn, opts))
    await recorded
  }

  /** Queues a turn with the chat's actor; returns the job id to wait on. */
  const send = async (p: Principal, chat: ChatRef, o: SendOptions): Promise<string> => {
    const jobId = randomUUID()
    await queue(p, chat, o, jobId)
    return jobId
  }

  /** Queues a turn with a waiter subscribed before the send (see `watchJob`: no extra round trips). */
  const submit = async (p: Principal, chat: ChatRef, o: SendOptions): Promise<{ jobId: string; watch: JobWatch }> => {
    const jobId = randomUUID()
    const watch = watchJob(d.nc, d.names, d.jobStore, jobId)
    try {
      await queue(p, chat, o, jobId)
    } catch (err) {
      watch.stop()
      throw err
    }
    return { jobId, watch }
  }

  /** Waits for a turn; the final assistant message, or the turn's error as 502/504. */
  const result = async (
    jobId: string,
    watch?: JobWatch,
  ): Promise<{ status: TurnResult['status']; message: MessageRow | null }> => {
    const timeoutMs = d.config.AGENT_JOB_TIMEOUT * 1000 + 60_000
    const done =
      watch === undefined
        ? await waitForJob(d.nc, d.names, d.jobStore, jobId, timeoutMs)
        : await watch.result(timeoutMs)
    if (done === null || done.status === 'queued' || done.status === 'running' || done.status === 'scheduled')
      throw new AppError(504, 'chat.turn_timeout', 'the reply did not come in time; it will still appear in the chat')
    // the chat went away after the message was accepted (deleted, expired): as if checked at the door
    if (done.status === 'failed' && jobErrorOf(done.error)?.code === 'chat.not_found')
      throw notFound('chat not found', 'chat.not_found')
    // refused when it started: the user's daily token budget ran out meanwhile (429, as at the door)
    if (done.status === 'failed' && jobErrorOf(done.error)?.code === 'usage.daily_budget_exhausted')
      throw budgetExhausted(jobErrorOf(done.error)?.message ?? 'the daily token budget is used up', new Date())
    // an answer that does not match the agent's output_schema is the agent's failure, not a provider's (422)
    if (done.status === 'failed' && jobErrorOf(done.error)?.code === 'agent.output_invalid')
      throw AppError.of(
        'agent.output_invalid',
        jobErrorOf(done.error)?.message ?? 'the answer does not match the output_schema',
      )
    if (done.status !== 'completed')
      throw new AppError(502, 'chat.turn_failed', jobErrorText(done.error) ?? `the turn ended ${done.status}`)
    return done.result as TurnResult
  }

  /**
   * Sends and waits for the final answer. A turn that suspended for sub-agents (suspend mode) ends
   * in a later job; its end is the channel's terminal event, which is listened for from the start.
   */
  const sendAndWait = async (
    p: Principal,
    chat: ChatRef,
    o: Omit<SendOptions, 'channelId'>,
  ): Promise<{ status: TurnResult['status']; message: MessageRow | null }> => {
    // only a turn that may suspend needs its events: in block mode the job's result is the answer
    if (d.config.AGENT_DELEGATE_MODE !== 'suspend') {
      const { jobId, watch } = await submit(p, chat, { ...o, channelId: null })
      return result(jobId, watch)
    }
    const channelId = newChannelId()
    const sub = d.nc.subscribe(sseLiveSubject(d.names, channelId))
    try {
      const sent = await submit(p, chat, { ...o, channelId })
      const out = await result(sent.jobId, sent.watch)
      if (out.status !== 'suspended') return out
      const timer = setTimeout(() => sub.unsubscribe(), d.config.AGENT_JOB_TIMEOUT * 1000 + 60_000)
      try {
        for await (const m of sub) {
          const event = m.headers?.get(EVENT_HEADER) ?? ''
          if (event === 'error')
            throw new AppError(
              502,
              'chat.turn_failed',
              String(m.json<{ detail?: string }>().detail ?? 'the turn failed'),
            )
          if (event === 'done') {
            const last = (await store.messages(chat.id, 1))[0] ?? null
            return {
              status: String(m.json<{ status?: string }>().status ?? 'completed') as TurnResult['status'],
              message: last?.role === 'assistant' ? last : null,
            }
          }
        }
      } finally {
        clearTimeout(timer)
      }
      throw new AppError(504, 'chat.turn_timeout', 'the reply did not come in time; it will still appear in the chat')
    } finally {
      sub.unsubscribe()
    }
  }

  return {
    store,
    agentFor,
    chatOf,
    ownChat,
    speakIn,
    createChat,
    openSession,
    queue,
    send,
    submit,
    result,
    sendAndWait,
  }
}

export type ChatService = ReturnType<typeof chatService>
