import { useState } from 'react'
import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { ActionForm, Field, Page, useAction, useAsync } from '../../ui/index.ts'
import { AdminTable, DeleteButton } from './AdminList.tsx'

/* Roles (admin): their permissions and members, create with permissions, delete. */
type Role = ResponseOf<'roles.list'>[number]
type Reference = ResponseOf<'roles.permissions.reference'>

export default function RolesPage() {
  const roles = useAsync((signal) => api<Role[]>('GET', '/roles', { signal }), [])
  const reference = useAsync((signal) => api<Reference>('GET', '/roles/permissions/reference', { signal }), [])
  const action = useAction()
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')
  const [permissions, setPermissions] = useState('')
  const grants = () =>
    Object.fromEntries(
      permissions
        .split(/[\s,]+/)
        .filter(Boolean)
        .map((p) => [p, true]),
    )
  return (
    <Page title="Roles">
      <ActionForm
        label="Create role"
        submit={() => api('POST', '/roles', { body: { name, description, permissions: grants() } })}
        onDone={() => {
          setName('')
          setDescription('')
          setPermissions('')
          roles.reload()
        }}
      >
        {(error) => (
          <>
            <div className="row">
              <Field label="Name" required error={error?.fieldMessage('name')}>
                {(c) => <input {...c} value={name} onChange={(e) => setName(e.target.value)} />}
              </Field>
              <Field label="Description" error={error?.fieldMessage('description')}>
                {(c) => <input {...c} value={description} onChange={(e) => setDescription(e.target.value)} />}
              </Field>
            </div>
            <Field
              label="Permissions"
              help="one per line or comma-separated, e.g. platform.agents.read:own"
              error={error?.fieldMessage('permissions')}
            >
              {(c) => (
                <textarea
                  {...c}
                  className="mono"
                  rows={3}
                  value={permissions}
                  onChange={(e) => setPermissions(e.target.value)}
                />
              )}
            </Field>
          </>
        )}
      </ActionForm>
      <AdminTable
        list={roles}
        actionError={action.error}
        caption="Roles"
        rowKey={(r) => r.id}
        columns={[
          { key: 'name', label: 'Name', render: (r) => r.name },
          { key: 'description', label: 'Description', render: (r) => r.description },
          {
            key: 'permissions',
            label: 'Permissions',
            render: (r) => (
              <span className="mono">
                {Object.entries(r.permissions)
                  .filter(([, on]) => on)
                  .map(([p]) => p)
                  .join(', ')}
              </span>
            ),
          },
          { key: 'users', label: 'Members', render: (r) => String(r.users.length) },
          {
            key: 'actions',
            label: 'Actions',
            render: (r) => (
              <DeleteButton
                action={action}
                what={`the role ${r.name}`}
                name={r.name}
                remove={async () => {
                  await api('DELETE', `/roles/${encodeURIComponent(r.name)}`)
                  roles.reload()
                }}
              />
            ),
          },
        ]}
      />
      {reference.data === undefined ? null : (
        <details className="reference">
          <summary>Every permission the platform checks</summary>
          <pre className="pre" tabIndex={0}>
            {JSON.stringify(reference.data, null, 2)}
          </pre>
        </details>
      )}
    </Page>
  )
}
