import { SkillSpec } from '../../../schemas/skill.ts'
import { defineKind } from '../../resources/kind.ts'

export const skillKind = defineKind({
  kind: 'skill',
  plural: 'skills',
  title: 'Skill',
  description: 'Instruction documents agents preload or call as tools.',
  spec: SkillSpec,
})
