import { useState } from 'react'
import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { useLocation, setSearch } from '../../app/router.ts'
import {
  ActionForm,
  Button,
  ErrorBanner,
  Field,
  Page,
  Pagination,
  Spinner,
  Table,
  useAction,
  useAsync,
} from '../../ui/index.ts'
import { formatTime } from '../resources/ResourceList.tsx'

/* Users (admin): list, create with roles, activate or deactivate, delete. */
type User = ResponseOf<'users.list'>[number]
const LIMIT = 50

export default function UsersPage() {
  const { search } = useLocation()
  const offset = Number(search.get('offset') ?? 0) || 0
  const users = useAsync(
    (signal) => api<User[]>('GET', '/users', { query: { limit: LIMIT, offset }, signal }),
    [offset],
  )
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
      <ErrorBanner error={users.error ?? action.error} />
      {users.data === undefined ? (
        users.loading ? (
          <Spinner />
        ) : null
      ) : (
        <>
          <Table
            caption="Users"
            rows={users.data}
            rowKey={(u) => u.id}
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
                    <Button
                      kind="danger"
                      busy={action.busy}
                      onClick={() =>
                        void action.run(async () => {
                          if (!window.confirm(`Delete the user ${u.email}?`)) return
                          await api('DELETE', `/users/${u.id}`)
                          users.reload()
                        })
                      }
                    >
                      Delete<span className="sr-only"> {u.email}</span>
                    </Button>
                  </span>
                ),
              },
            ]}
          />
          <Pagination
            offset={offset}
            limit={LIMIT}
            count={users.data.length}
            onOffset={(o) => setSearch({ offset: o || undefined })}
          />
        </>
      )}
    </Page>
  )
}
