import { JsonView } from './JsonView.tsx'

export default function ContainersPage() {
  return <JsonView title="Containers" path="/containers/stats" />
}
