import { useState } from 'react'
import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { ActionForm, Button, Field, Page, useAction } from '../../ui/index.ts'
import { formatTime } from '../resources/ResourceList.tsx'
import { AdminTable, DeleteButton, usePagedList } from './AdminList.tsx'

/* Users (admin): list, create with roles, activate or deactivate, delete. */
type User = ResponseOf<'users.list'>[number]

export default function UsersPage() {
  const users = usePagedList<User>('/users')
  const action = useAction()
  const [email, setEmail] = useState('')
  const [roles, setRoles] = useState('Users')
  return (
    <Page title="Users">
      <ActionForm
        label="Create user"
        submit={() =>
          api('POST', '/users', {
            body: {
              email,
              roles: roles
                .split(',')
                .map((r) => r.trim())
                .filter(Boolean),
            },
          })
        }
        onDone={() => {
          setEmail('')
          users.reload()
        }}
      >
        {(error) => (
          <div className="row">
            <Field label="Email" error={error?.fieldMessage('email')} required>
              {(c) => <input {...c} type="email" value={email} onChange={(e) => setEmail(e.target.value)} />}
            </Field>
            <Field label="Roles" help="comma-separated role names" error={error?.fieldMessage('roles')}>
              {(c) => <input {...c} value={roles} onChange={(e) => setRoles(e.target.value)} />}
            </Field>
          </div>
        )}
      </ActionForm>
      <AdminTable
        list={users}
        actionError={action.error}
        caption="Users"
        rowKey={(u) => u.id}
        offset={users.offset}
        columns={[
          { key: 'email', label: 'Email', render: (u) => u.email },
          { key: 'roles', label: 'Roles', render: (u) => u.roles.join(', ') },
          { key: 'active', label: 'Active', render: (u) => (u.is_active ? 'yes' : 'no') },
          { key: 'last', label: 'Last sign-in', render: (u) => formatTime(u.last_login_at) || 'never' },
          {
            key: 'actions',
            label: 'Actions',
            render: (u) => (
              <span className="row-actions">
                <Button
                  busy={action.busy}
                  onClick={() =>
                    void action.run(async () => {
                      await api('PATCH', `/users/${u.id}`, { body: { is_active: !u.is_active } })
                      users.reload()
                    })
                  }
                >
                  {u.is_active ? 'Deactivate' : 'Activate'}
                  <span className="sr-only"> {u.email}</span>
                </Button>
                <DeleteButton
                  action={action}
                  what={`the user ${u.email}`}
                  name={u.email}
                  remove={async () => {
                    await api('DELETE', `/users/${u.id}`)
                    users.reload()
                  }}
                />
              </span>
            ),
          },
        ]}
      />
    </Page>
  )
}
