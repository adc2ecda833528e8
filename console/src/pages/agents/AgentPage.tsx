import { useEffect, useState, type FormEvent } from 'react'
import { api } from '../../api/client.ts'
import { Link } from '../../app/link.tsx'
import type { PageProps } from '../../app/pages.ts'
import { navigate } from '../../app/router.ts'
import { Button, ErrorBanner, Field, Page, Spinner } from '../../ui/index.ts'
import { CodeEditor } from '../functions/CodeEditor.tsx'
import type { Agent, Named } from '../work/types.ts'
import { HooksEditor } from './HooksEditor.tsx'
import { RefPicker } from './RefPicker.tsx'

/*
 * One agent (`/agents/<ns>/<name>`, `/agents/new`): prompt and model settings, and what it may
 * use — functions as tools, skills (each optionally preloaded), sub-agents and hook functions —
 * picked from the lists of what exists. Create is POST /api/v1/agents, save PUT, delete DELETE.
 */
type SkillEntry = Agent['enabled_skills'][number]
type Editable = Pick<
  Agent,
  | 'namespace'
  | 'name'
  | 'description'
  | 'system_prompt'
  | 'model'
  | 'llm_provider_id'
  | 'temperature'
  | 'max_tokens'
  | 'enabled_functions'
  | 'enabled_agents'
  | 'enabled_skills'
  | 'hooks'
>

const NEW_AGENT: Editable = {
  namespace: 'default',
  name: '',
  description: '',
  system_prompt: 'You are a helpful assistant.',
  model: null,
  llm_provider_id: null,
  temperature: 0.7,
  max_tokens: null,
  enabled_functions: [],
  enabled_agents: [],
  enabled_skills: [],
  hooks: { on_user_message: [], on_assistant_message: [] },
}

const refs = (list: Named[]) => list.map((x) => `${x.namespace}/${x.name}`)
const skillRef = (s: SkillEntry) => (typeof s === 'string' ? s : s.skill)

export default function AgentPage({ params }: PageProps) {
  const isNew = params['namespace'] === undefined || params['name'] === undefined
  const agentRef = isNew ? '' : `${params['namespace'] as string}/${params['name'] as string}`
  const [agent, setAgent] = useState<Editable | null>(isNew ? NEW_AGENT : null)
  const [functions, setFunctions] = useState<string[] | null>(null)
  const [skills, setSkills] = useState<string[] | null>(null)
  const [agents, setAgents] = useState<string[] | null>(null)
  const [providers, setProviders] = useState<{ id: string; name: string }[]>([])
  const [schemaText, setSchemaText] = useState('{}')
  const [error, setError] = useState<unknown>(undefined)
  const [saved, setSaved] = useState(false)
  const [saving, setSaving] = useState(false)

  useEffect(() => {
    if (!isNew)
      api<Agent>('GET', `/agents/${agentRef}`).then(
        (a) => (setAgent(a), setSchemaText(JSON.stringify(a.input_schema ?? {}, null, 2))),
        (err: unknown) => setError(err),
      )
    const all = { query: { limit: 1000 } }
    api<Named[]>('GET', '/functions', all).then(
      (l) => setFunctions(refs(l)),
      () => setFunctions([]),
    )
    api<Named[]>('GET', '/skills', all).then(
      (l) => setSkills(refs(l)),
      () => setSkills([]),
    )
    api<Named[]>('GET', '/agents', all).then(
      (l) => setAgents(refs(l).filter((r) => r !== agentRef)),
      () => setAgents([]),
    )
    // providers are an admin's list; others use the default provider
    api<{ id: string; name: string }[]>('GET', '/llm-providers').then(setProviders, () => setProviders([]))
  }, [agentRef, isNew])

  if (agent === null)
    return (
      <Page title={agentRef}>
        <ErrorBanner error={error} />
        {error === undefined ? <Spinner /> : null}
      </Page>
    )
  const put = (patch: Partial<Editable>) => setAgent({ ...agent, ...patch })
  const preload = new Map(agent.enabled_skills.map((s) => [skillRef(s), typeof s === 'string' ? false : s.preload]))

  const save = async (e: FormEvent) => {
    e.preventDefault()
    let input_schema: unknown
    try {
      input_schema = JSON.parse(schemaText === '' ? '{}' : schemaText)
    } catch {
      setError(new Error('The input schema is not valid JSON.'))
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
    setError(undefined)
    setSaved(false)
    try {
      const out = isNew
        ? await api<Agent>('POST', '/agents', { body: { namespace: agent.namespace, name: agent.name, ...body } })
        : await api<Agent>('PUT', `/agents/${agentRef}`, { body })
      setSaved(true)
      if (isNew) navigate(`/agents/${out.namespace}/${out.name}`)
      else setAgent(out)
    } catch (err) {
      setError(err)
    } finally {
      setSaving(false)
    }
  }

  const remove = async () => {
    if (!window.confirm(`Delete the agent ${agentRef} and its chats?`)) return
    try {
      await api<void>('DELETE', `/agents/${agentRef}`)
      navigate('/agents')
    } catch (err) {
      setError(err)
    }
  }

  return (
    <Page
      title={isNew ? 'New agent' : agentRef}
      actions={
        <>
          {!isNew && (
            <Link className="btn btn-secondary" href={`/chat?agent=${encodeURIComponent(agentRef)}`}>
              Chat
            </Link>
          )}
          <Link className="btn btn-secondary" href="/agents">
            All agents
          </Link>
        </>
      }
    >
      <form className="agent-form" onSubmit={(e) => void save(e)} aria-label="Agent">
        <section className="panel" aria-labelledby="agent-settings">
          <h2 id="agent-settings">Settings</h2>
          {isNew && (
            <div className="form-row">
              <Field label="Namespace" required>
                {(c) => <input {...c} value={agent.namespace} onChange={(e) => put({ namespace: e.target.value })} />}
              </Field>
              <Field label="Name" required>
                {(c) => <input {...c} value={agent.name} onChange={(e) => put({ name: e.target.value })} />}
              </Field>
            </div>
          )}
          <Field label="Description">
            {(c) => <input {...c} value={agent.description} onChange={(e) => put({ description: e.target.value })} />}
          </Field>
          <Field label="System prompt" help="A template over the chat's input variables, e.g. {{ customer }}.">
            {(c) => (
              <textarea
                {...c}
                rows={6}
                value={agent.system_prompt}
                onChange={(e) => put({ system_prompt: e.target.value })}
              />
            )}
          </Field>
          <div className="form-row">
            <Field label="Provider">
              {(c) => (
                <select
                  {...c}
                  value={agent.llm_provider_id ?? ''}
                  onChange={(e) => put({ llm_provider_id: e.target.value === '' ? null : e.target.value })}
                >
                  <option value="">the default provider</option>
                  {providers.map((p) => (
                    <option key={p.id} value={p.id}>
                      {p.name}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <Field label="Model">
              {(c) => (
                <input
                  {...c}
                  value={agent.model ?? ''}
                  placeholder="the provider's default"
                  onChange={(e) => put({ model: e.target.value })}
                />
              )}
            </Field>
            <Field label="Temperature">
              {(c) => (
                <input
                  {...c}
                  type="number"
                  min={0}
                  max={2}
                  step={0.1}
                  value={agent.temperature}
                  onChange={(e) => put({ temperature: Number(e.target.value) })}
                />
              )}
            </Field>
            <Field label="Max tokens">
              {(c) => (
                <input
                  {...c}
                  type="number"
                  min={1}
                  value={agent.max_tokens ?? ''}
                  placeholder="no limit"
                  onChange={(e) => put({ max_tokens: e.target.value === '' ? null : Number(e.target.value) })}
                />
              )}
            </Field>
          </div>
          <div className="field">
            <span className="field-label">Input schema (JSON Schema of the chat's input)</span>
            <CodeEditor value={schemaText} onChange={setSchemaText} language="json" label="Input schema" />
          </div>
        </section>
        <section className="panel pick-grid" aria-labelledby="agent-uses">
          <h2 id="agent-uses">What it may use</h2>
          <RefPicker
            legend="Tools (functions)"
            options={functions}
            value={agent.enabled_functions}
            onChange={(v) => put({ enabled_functions: v })}
            empty="No functions exist yet."
          />
          <RefPicker
            legend="Sub-agents"
            options={agents}
            value={agent.enabled_agents}
            onChange={(v) => put({ enabled_agents: v })}
            empty="No other agents exist."
          />
          <div>
            <RefPicker
              legend="Skills"
              options={skills}
              value={agent.enabled_skills.map(skillRef)}
              onChange={(v) =>
                put({
                  enabled_skills: v.map((ref) => (preload.get(ref) === true ? { skill: ref, preload: true } : ref)),
                })
              }
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
                        className="checkbox"
                        checked={preload.get(ref) === true}
                        onChange={(e) =>
                          put({
                            enabled_skills: agent.enabled_skills.map((s) =>
                              skillRef(s) === ref ? (e.target.checked ? { skill: ref, preload: true } : ref) : s,
                            ),
                          })
                        }
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
        <ErrorBanner error={error} />
        {saved ? (
          <p className="muted" role="status">
            Saved.
          </p>
        ) : null}
        <div className="form-actions">
          <Button kind="primary" type="submit" busy={saving}>
            {isNew ? 'Create agent' : 'Save'}
          </Button>
          {!isNew && (
            <Button kind="danger" onClick={() => void remove()}>
              Delete
            </Button>
          )}
        </div>
      </form>
    </Page>
  )
}
