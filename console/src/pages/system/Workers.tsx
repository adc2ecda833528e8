import { JsonView } from './JsonView.tsx'

export default function WorkersPage() {
  return <JsonView title="Workers" path="/queue/workers" />
}
