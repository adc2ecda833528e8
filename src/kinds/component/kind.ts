import { ComponentSpec } from '../../../schemas/component.ts'
import { defineKind } from '../../resources/kind.ts'

/*
 * UI components. CRUD comes from the engine; compiling, rendering, share links and
 * the proxies are the components feature (src/components/). `compiled_bundle` is not a stored
 * field of the component: it is set by compilation only (component_bundles, migration 0014).
 */
export const componentKind = defineKind({
  kind: 'component',
  plural: 'components',
  title: 'Component',
  description:
    'UI widgets compiled from JSX and rendered as pages; they call functions, agents, queries and stores only through proxies that enforce their enabled_* lists.',
  spec: ComponentSpec,
  refs: (s) => [
    ...s.enabled_functions.map((ref) => ({ kind: 'function', ref })),
    ...s.enabled_agents.map((ref) => ({ kind: 'agent', ref })),
    ...s.enabled_queries.map((ref) => ({ kind: 'query', ref })),
    ...s.enabled_components.map((ref) => ({ kind: 'component', ref })),
    ...s.enabled_stores.map((e) => ({ kind: 'store', ref: e.store })),
  ],
})
