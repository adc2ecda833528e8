import { JsonView } from '../system/JsonView.tsx'

export default function RolesPage() {
  return <JsonView title="Roles" path="/roles" />
}
