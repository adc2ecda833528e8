import { JsonView } from './JsonView.tsx'

export default function RequestLogsPage() {
  return <JsonView title="RequestLogs" path="/request-logs" />
}
