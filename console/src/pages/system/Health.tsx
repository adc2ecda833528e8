import { JsonView } from './JsonView.tsx'

export default function HealthPage() {
  return <JsonView title="Health" path="/system/health" />
}
