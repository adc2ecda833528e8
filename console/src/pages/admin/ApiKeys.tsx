import { JsonView } from '../system/JsonView.tsx'

export default function ApiKeysPage() {
  return <JsonView title="ApiKeys" path="/api-keys" />
}
