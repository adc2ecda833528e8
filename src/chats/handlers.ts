import { bind, type BoundRoute } from '../api/bind.ts'
import { conflict, notFound } from '../kernel/errors.ts'
import { CHAT_ROUTES } from './routes.ts'
import { chatService, type ChatHandlerDeps } from './service.ts'
import { turnCanceller } from './cancel-turn.ts'
import type { ChatRow } from './store.ts'
import { newChannelId, streamReply } from '../streaming/channel.ts'

/* The chat endpoints, each bound to the chat service (service.ts). */
export function chatHandlers(d: ChatHandlerDeps): BoundRoute[] {
  const svc = chatService(d)
  const { store } = svc
  const cancelTurn = turnCanceller(d)
  const R = CHAT_ROUTES
  const publicChat = (c: ChatRow) => {
    const { agent_id: _a, internal: _i, ...rest } = c
    return rest
  }

  return [
    bind(R.chatsCreate, async ({ principal: p, params, body }) => {
      const agent = await svc.agentFor(p, params.namespace, params.name)
      const chat = await svc.createChat(p, agent, {
        ...(body.input === undefined ? {} : { input: body.input }),
        title: body.title ?? null,
        expiresIn: body.expires_in ?? null,
      })
      return { status: 201, body: publicChat(chat) }
    }),
    bind(R.chatsList, async ({ principal: p, query: q }) => {
      const chats = await store.list(p.userId, {
        includeArchived: q.include_archived === true,
        limit: q.limit ?? 100,
        offset: q.offset ?? 0,
      })
      return { body: chats.map(publicChat) }
    }),
    bind(R.chatsGet, async ({ principal: p, params }) => {
      const chat = await svc.chatOf(p, params.id)
      const [messages, pending] = await Promise.all([store.messages(chat.id), store.pendingApprovals(chat.id)])
      return { body: { ...publicChat(chat), messages, pending_approvals: pending } }
    }),
    bind(R.chatsUpdate, async ({ principal: p, params, body }) => {
      const chat = await svc.chatOf(p, params.id, true)
      const updated = await store.update(chat.id, body)
      // deleted between the read and the write
      if (updated === null) throw notFound(`chat ${chat.id} not found`, 'chat.not_found')
      return { body: publicChat(updated) }
    }),
    bind(R.chatsDelete, async ({ principal: p, params }) => {
      const chat = await svc.chatOf(p, params.id, true)
      await store.remove(chat.id)
      return { status: 204 }
    }),
    bind(R.chatsSend, async ({ principal: p, params, body }) => {
      const chat = await svc.speakIn(p, params.id)
      const out = await svc.sendAndWait(p, chat, { content: body.content })
      return { body: { ...(out.message ?? {}), status: out.status } }
    }),
    bind(R.chatsSendStream, async ({ principal: p, params, body, request }) => {
      const chat = await svc.speakIn(p, params.id)
      // the gateway listens on this channel already: no event of the turn can be missed
      const channelId = request.streamChannelId ?? newChannelId()
      await svc.send(p, chat, { content: body.content, channelId })
      return streamReply(channelId)
    }),
    bind(R.chatsStream, async ({ principal: p, params, query, request }) => {
      const chat = await svc.chatOf(p, params.id)
      const channelId = params.channel_id
      // a chat's channels are its own: only its current (or last) channel resumes
      if (chat.active_channel_id !== channelId)
        throw notFound(`no stream ${channelId} in this chat`, 'chat.stream_not_found')
      return streamReply(channelId, request.streamLastId ?? query.last_id ?? 0)
    }),
    bind(R.chatsCancel, async ({ principal: p, params }) => {
      // who may speak in the chat may stop its turn (admins read others' chats, never stop their turns)
      const chat = await svc.speakIn(p, params.id)
      return { body: await cancelTurn(chat.id) }
    }),
    bind(R.chatsApproveTool, async ({ principal: p, params: { id, tool_call_id: toolCallId }, body: { approved } }) => {
      const chat = await svc.ownChat(p, id)
      const pending = await store.approval(chat.id, toolCallId)
      if (pending === null)
        throw notFound(`no tool call ${toolCallId} waits for approval in this chat`, 'chat.approval_not_found')
      if (!(await store.decide(chat.id, toolCallId, approved)))
        throw conflict(`tool call ${toolCallId} was already ${pending.status}`, 'chat.approval_decided')
      const channelId = newChannelId()
      await svc.send(p, chat, { approval: { tool_call_id: toolCallId, approved }, channelId })
      return {
        status: 202,
        body: { status: approved ? 'approved' : 'rejected', tool_call_id: toolCallId, channel_id: channelId },
      }
    }),
    bind(R.agentsInvoke, async ({ principal: p, params: { namespace: ns, name }, body }) => {
      const agent = await svc.agentFor(p, ns, name)
      let chat: ChatRow | null = null
      // made by this request: its actor starts without reading its state (only then: two requests
      // racing for one new session must not both start the chat's actor afresh)
      let fresh = false
      if (body.session_key !== undefined) {
        chat = await store.bySession(p.userId, ns, name, body.session_key)
        if (chat !== null && body.reset === true) {
          await store.update(chat.id, { archived: true })
          chat = null
        }
        // input is used only when the chat is created
        if (chat === null) {
          const opened = await svc.openSession(p, agent, body.session_key, body.input)
          chat = opened.chat
          fresh = opened.created
        }
      } else {
        chat = await svc.createChat(p, agent, body.input === undefined ? {} : { input: body.input })
        fresh = true
      }
      const out = await svc.sendAndWait(p, chat, { content: body.message, fresh })
      return { body: { reply: out.message?.content ?? '', chat_id: chat.id, session_key: body.session_key ?? null } }
    }),
  ]
}
