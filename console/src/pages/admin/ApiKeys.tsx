import { useState } from 'react'
import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { ActionForm, Button, Field, Page, useAction } from '../../ui/index.ts'
import { formatTime } from '../resources/ResourceList.tsx'
import { AdminTable, DeleteButton, usePagedList } from './AdminList.tsx'

/*
 * API keys: list, create (the key is shown once, here, and never again), delete. The key shown is
 * the one thing of this kind the page holds: it is the user's to copy, not the console's session.
 */
type Key = ResponseOf<'api-keys.list'>[number]

export default function ApiKeysPage() {
  const keys = usePagedList<Key>('/api-keys')
  const action = useAction()
  const [name, setName] = useState('')
  const [permissions, setPermissions] = useState('')
  const [created, setCreated] = useState<string | undefined>(undefined)
  return (
    <Page title="API keys">
      <ActionForm
        label="Create API key"
        submit={async () => {
          const grants = Object.fromEntries(
            permissions
              .split(/[\s,]+/)
              .filter(Boolean)
              .map((p) => [p, true]),
          )
          const k = await api<ResponseOf<'api-keys.create'>>('POST', '/api-keys', {
            body: { name, permissions: grants },
          })
          setCreated(k.key)
        }}
        onDone={() => {
          setName('')
          keys.reload()
        }}
      >
        {(error) => (
          <div className="row">
            <Field label="Name" required error={error?.fieldMessage('name')}>
              {(c) => <input {...c} value={name} onChange={(e) => setName(e.target.value)} />}
            </Field>
            <Field
              label="Permissions"
              help="comma-separated; at most your own"
              error={error?.fieldMessage('permissions')}
            >
              {(c) => (
                <input {...c} className="mono" value={permissions} onChange={(e) => setPermissions(e.target.value)} />
              )}
            </Field>
          </div>
        )}
      </ActionForm>
      {created === undefined ? null : (
        <div className="banner" role="status">
          The new key (shown once; copy it now): <code className="mono">{created}</code>{' '}
          <Button onClick={() => setCreated(undefined)}>Done</Button>
        </div>
      )}
      <AdminTable
        list={keys}
        actionError={action.error}
        caption="API keys"
        rowKey={(k) => k.id}
        offset={keys.offset}
        columns={[
          { key: 'name', label: 'Name', render: (k) => k.name },
          { key: 'prefix', label: 'Prefix', render: (k) => <span className="mono">{k.key_prefix}</span> },
          {
            key: 'permissions',
            label: 'Permissions',
            render: (k) => <span className="mono">{Object.keys(k.permissions).join(', ')}</span>,
          },
          { key: 'expires', label: 'Expires', render: (k) => formatTime(k.expires_at) || 'never' },
          { key: 'used', label: 'Last used', render: (k) => formatTime(k.last_used_at) || 'never' },
          {
            key: 'actions',
            label: 'Actions',
            render: (k) => (
              <DeleteButton
                action={action}
                what={`the API key ${k.name}`}
                name={k.name}
                remove={async () => {
                  await api('DELETE', `/api-keys/${k.id}`)
                  keys.reload()
                }}
              />
            ),
          },
        ]}
      />
    </Page>
  )
}
