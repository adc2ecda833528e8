import { useEffect, useState, type FormEvent } from 'react'
import { api } from '../../api/client.ts'

/* The caller's chats, newest first, and the form that starts a chat with an agent. */
export interface ChatSummary {
  id: string
  agent_namespace: string
  agent_name: string
  title: string | null
  last_message_at: string | null
  created_at: string
}

export function ChatList({
  chats,
  current,
  onOpen,
  onNew,
}: {
  chats: ChatSummary[] | null
  current: string | null
  onOpen: (id: string) => void
  onNew: (agent: string) => Promise<void>
}) {
  const [agents, setAgents] = useState<string[]>([])
  const [agent, setAgent] = useState('')
  useEffect(() => {
    const load = async () => {
      try {
        const list = await api<{ namespace: string; name: string }[]>('GET', '/agents', { query: { limit: 1000 } })
        const refs = list.map((a) => `${a.namespace}/${a.name}`)
        setAgents(refs)
        // `?agent=` (the agents page's Chat link) picks the agent of the next chat
        const wanted = new URLSearchParams(window.location.search).get('agent')
        setAgent((a) => (a !== '' ? a : wanted !== null && refs.includes(wanted) ? wanted : (refs[0] ?? '')))
      } catch {
        setAgents([])
      }
    }
    void load()
  }, [])
  const start = (e: FormEvent) => {
    e.preventDefault()
    if (agent !== '') void onNew(agent)
  }
  const sorted = (chats ?? []).slice().sort((a, b) => (b.last_message_at ?? b.created_at).localeCompare(a.last_message_at ?? a.created_at))
  return (
    <nav className="chat-list" aria-label="Chats">
      <form className="chat-new" onSubmit={start}>
        <label htmlFor="chat-agent">Agent</label>
        <select id="chat-agent" value={agent} onChange={(e) => setAgent(e.target.value)}>
          {agents.map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
        <button type="submit" className="btn btn-primary" disabled={agent === ''}>
          New chat
        </button>
      </form>
      {chats === null ? (
        <p className="muted">Loading…</p>
      ) : sorted.length === 0 ? (
        <p className="muted">No chats yet.</p>
      ) : (
        <ul>
          {sorted.map((c) => (
            <li key={c.id}>
              <button
                type="button"
                className={`chat-link ${c.id === current ? 'current' : ''}`}
                aria-current={c.id === current ? 'page' : undefined}
                onClick={() => onOpen(c.id)}
              >
                <span className="chat-link-title">{c.title ?? `${c.agent_namespace}/${c.agent_name}`}</span>
                <span className="chat-link-date">{new Date(c.last_message_at ?? c.created_at).toLocaleString()}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
    </nav>
  )
}
