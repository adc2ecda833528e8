import { Type as T } from '@sinclair/typebox'

/* Skill fields. */
export const SkillSpec = T.Object(
  {
    description: T.String({ default: '', maxLength: 4000, description: 'shown to the LLM as the tool description' }),
    content: T.String({ default: '', maxLength: 1_000_000, description: 'Markdown instructions' }),
  },
  { additionalProperties: false },
)
