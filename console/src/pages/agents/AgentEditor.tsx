import { useEffect, useState, type FormEvent } from 'react'
import { api } from '../../api/client.ts'
import { CodeEditor } from '../functions/CodeEditor.tsx'
import { describe } from '../work/describe.ts'
import { HooksEditor, type Hooks } from './HooksEditor.tsx'
import { Pick } from './Pick.tsx'

/*
 * One agent: prompt and model settings, and what it may use — functions as tools, skills (each
 * optionally preloaded), sub-agents and hook functions — picked from the lists of what exists.
 * Create is POST /api/v1/agents, save PUT, delete DELETE.
 */
type SkillEntry = string | { skill: string; preload: boolean }
export interface AgentRecord {
  namespace: string
  name: string
  description: string
  system_prompt: string
  model: string | null
  llm_provider_id: string | null
  temperature: number
  max_tokens: number | null
  input_schema: Record<string, unknown>
  enabled_functions: string[]
  enabled_agents: string[]
  enabled_skills: SkillEntry[]
  hooks: Hooks
}

const NEW_AGENT: AgentRecord = {
  namespace: 'default',
  name: '',
  description: '',
  system_prompt: 'You are a helpful assistant.',
  model: null,
  llm_provider_id: null,
  temperature: 0.7,
  max_tokens: null,
  input_schema: {},
  enabled_functions: [],
  enabled_agents: [],
  enabled_skills: [],
  hooks: { on_user_message: [], on_assistant_message: [] },
}

interface Named {
  namespace: string
  name: string
}
const refs = (list: Named[]) => list.map((x) => `${x.namespace}/${x.name}`)
const skillRef = (s: SkillEntry) => (typeof s === 'string' ? s : s.skill)

export function AgentEditor({ agentRef, onClose, onSaved, onDeleted }: { agentRef: string; onClose: () => void; onSaved: (ref: string) => void; onDeleted: () => void }) {
  const isNew = agentRef === 'new'
  const [agent, setAgent] = useState<AgentRecord | null>(isNew ? NEW_AGENT : null)
  const [functions, setFunctions] = useState<string[] | null>(null)
  const [skills, setSkills] = useState<string[] | null>(null)
  const [agents, setAgents] = useState<string[] | null>(null)
  const [providers, setProviders] = useState<{ id: string; name: string }[]>([])
  const [schemaText, setSchemaText] = useState('{}')
  const [message, setMessage] = useState<{ tone: 'error' | 'ok'; text: string } | null>(null)
  const [saving, setSaving] = useState(false)

  useEffect(() => {
    if (!isNew)
      api<AgentRecord>('GET', `/agents/${agentRef}`).then(
        (a) => (setAgent(a), setSchemaText(JSON.stringify(a.input_schema ?? {}, null, 2))),
        (err) => setMessage({ tone: 'error', text: describe(err) }),
      )
    const all = { query: { limit: 1000 } }
    api<Named[]>('GET', '/functions', all).then((l) => setFunctions(refs(l)), () => setFunctions([]))
    api<Named[]>('GET', '/skills', all).then((l) => setSkills(refs(l)), () => setSkills([]))
    api<Named[]>('GET', '/agents', all).then((l) => setAgents(refs(l).filter((r) => r !== agentRef)), () => setAgents([]))
    // providers are an admin's list; others use the default provider
    api<{ id: string; name: string }[]>('GET', '/llm-providers').then(setProviders, () => setProviders([]))
  }, [agentRef, isNew])

  if (agent === null)
    return (
      <div className="work-page">
        {message !== null ? (
          <div className="banner banner-error" role="alert">
            {message.text}
          </div>
        ) : (
          <p className="muted">Loading…</p>
        )}
      </div>
    )
  const put = (patch: Partial<AgentRecord>) => setAgent({ ...agent, ...patch })
  const preload = new Map(agent.enabled_skills.map((s) => [skillRef(s), typeof s === 'string' ? false : s.preload]))

  const save = async (e: FormEvent) => {
    e.preventDefault()
    let input_schema: unknown
    try {
      input_schema = JSON.parse(schemaText === '' ? '{}' : schemaText)
    } catch {
      setMessage({ tone: 'error', text: 'The input schema is not valid JSON.' })
      return
    }
    const body = {
      description: agent.description,
      system_prompt: agent.system_prompt,
      model: agent.model === '' ? null : agent.model,
      llm_provider_id: agent.llm_provider_id,
      temperature: agent.temperature,
      max_tokens: agent.max_tokens,
      input_schema,
      enabled_functions: agent.enabled_functions,
      enabled_agents: agent.enabled_agents,
      enabled_skills: agent.enabled_skills,
      hooks: agent.hooks,
    }
    setSaving(true)
    setMessage(null)
    try {
      const saved = isNew
        ? await api<AgentRecord>('POST', '/agents', { body: { namespace: agent.namespace, name: agent.name, ...body } })
        : await api<AgentRecord>('PUT', `/agents/${agentRef}`, { body })
      setMessage({ tone: 'ok', text: 'Saved.' })
      onSaved(`${saved.namespace}/${saved.name}`)
    } catch (err) {
      setMessage({ tone: 'error', text: describe(err) })
    } finally {
      setSaving(false)
    }
  }

  const remove = async () => {
    if (!window.confirm(`Delete the agent ${agentRef} and its chats?`)) return
    try {
      await api<void>('DELETE', `/agents/${agentRef}`)
      onDeleted()
    } catch (err) {
      setMessage({ tone: 'error', text: describe(err) })
    }
  }

  return (
    <div className="work-page">
      <header className="page-head">
        <h1>{isNew ? 'New agent' : agentRef}</h1>
        <button type="button" className="btn" onClick={onClose}>
          All agents
        </button>
      </header>
      <form className="form agent-form" onSubmit={save} aria-label="Agent">
        <section className="panel">
          {isNew && (
            <div className="field-row">
              <div className="field">
                <label htmlFor="agent-ns">Namespace</label>
                <input id="agent-ns" value={agent.namespace} onChange={(e) => put({ namespace: e.target.value })} required />
              </div>
              <div className="field">
                <label htmlFor="agent-name">Name</label>
                <input id="agent-name" value={agent.name} onChange={(e) => put({ name: e.target.value })} required />
              </div>
            </div>
          )}
          <div className="field">
            <label htmlFor="agent-description">Description</label>
            <input id="agent-description" value={agent.description} onChange={(e) => put({ description: e.target.value })} />
          </div>
          <div className="field">
            <label htmlFor="agent-prompt">System prompt</label>
            <textarea id="agent-prompt" rows={6} value={agent.system_prompt} onChange={(e) => put({ system_prompt: e.target.value })} />
            <span className="field-help">A template over the chat's input variables, e.g. {'{{ customer }}'}.</span>
          </div>
          <div className="field-row">
            <div className="field">
              <label htmlFor="agent-provider">Provider</label>
              <select id="agent-provider" value={agent.llm_provider_id ?? ''} onChange={(e) => put({ llm_provider_id: e.target.value === '' ? null : e.target.value })}>
                <option value="">the default provider</option>
                {providers.map((p) => (
                  <option key={p.id} value={p.id}>
                    {p.name}
                  </option>
                ))}
              </select>
            </div>
            <div className="field">
              <label htmlFor="agent-model">Model</label>
              <input id="agent-model" value={agent.model ?? ''} placeholder="the provider's default" onChange={(e) => put({ model: e.target.value })} />
            </div>
            <div className="field">
              <label htmlFor="agent-temperature">Temperature</label>
              <input id="agent-temperature" type="number" min={0} max={2} step={0.1} value={agent.temperature} onChange={(e) => put({ temperature: Number(e.target.value) })} />
            </div>
            <div className="field">
              <label htmlFor="agent-max-tokens">Max tokens</label>
              <input
                id="agent-max-tokens"
                type="number"
                min={1}
                value={agent.max_tokens ?? ''}
                placeholder="no limit"
                onChange={(e) => put({ max_tokens: e.target.value === '' ? null : Number(e.target.value) })}
              />
            </div>
          </div>
          <div className="field">
            <span className="label">Input schema (JSON Schema of the chat's input)</span>
            <CodeEditor value={schemaText} onChange={setSchemaText} language="json" label="Input schema" />
          </div>
        </section>
        <section className="panel pick-grid">
          <Pick legend="Tools (functions)" options={functions} value={agent.enabled_functions} onChange={(v) => put({ enabled_functions: v })} empty="No functions exist yet." />
          <Pick legend="Sub-agents" options={agents} value={agent.enabled_agents} onChange={(v) => put({ enabled_agents: v })} empty="No other agents exist." />
          <div>
            <Pick
              legend="Skills"
              options={skills}
              value={agent.enabled_skills.map(skillRef)}
              onChange={(v) => put({ enabled_skills: v.map((ref) => (preload.get(ref) === true ? { skill: ref, preload: true } : ref)) })}
              empty="No skills exist yet."
            />
            {agent.enabled_skills.length > 0 && (
              <fieldset className="pick">
                <legend>Preload into the context</legend>
                <ul className="pick-list">
                  {agent.enabled_skills.map(skillRef).map((ref) => (
                    <li key={ref}>
                      <input
                        id={`preload-${ref}`}
                        type="checkbox"
                        checked={preload.get(ref) === true}
                        onChange={(e) => put({ enabled_skills: agent.enabled_skills.map((s) => (skillRef(s) === ref ? (e.target.checked ? { skill: ref, preload: true } : ref) : s)) })}
                      />
                      <label htmlFor={`preload-${ref}`}>{ref}</label>
                    </li>
                  ))}
                </ul>
              </fieldset>
            )}
          </div>
          <HooksEditor value={agent.hooks} onChange={(hooks) => put({ hooks })} functions={functions} />
        </section>
        {message !== null && (
          <div className={`banner banner-${message.tone}`} role={message.tone === 'error' ? 'alert' : 'status'}>
            {message.text}
          </div>
        )}
        <div className="actions">
          <button type="submit" className="btn btn-primary" disabled={saving}>
            {saving ? 'Saving…' : isNew ? 'Create agent' : 'Save'}
          </button>
          {!isNew && (
            <button type="button" className="btn btn-danger" onClick={() => void remove()}>
              Delete
            </button>
          )}
        </div>
      </form>
    </div>
  )
}
