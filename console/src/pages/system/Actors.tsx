import { JsonView } from './JsonView.tsx'

export default function ActorsPage() {
  return <JsonView title="Actors" path="/system/actors" />
}
