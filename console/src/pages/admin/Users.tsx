import { JsonView } from '../system/JsonView.tsx'

export default function UsersPage() {
  return <JsonView title="Users" path="/users" />
}
