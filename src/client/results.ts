/**
 * The results the client returns, typed from the server's own TypeBox schemas (src/schema/). Only
 * types are imported: a client user loads no TypeBox and no Fastify at run time.
 */
import type { Static } from '@sinclair/typebox'
import type { ListPromptsResultSchema } from '../schema/prompts.js'
import type { ListResourcesResultSchema, ListResourceTemplatesResultSchema } from '../schema/resources.js'
import type { CreateTaskResultSchema, DetailedTaskSchema } from '../schema/tasks.js'
import type { ListToolsResultSchema } from '../schema/tools.js'

import type { Tool } from '../schema/tools.js'
import type { Prompt } from '../schema/prompts.js'
import type { Resource, ResourceTemplate } from '../schema/resources.js'

export type { Tool, CallToolResult } from '../schema/tools.js'
export type { Prompt, PromptMessage, GetPromptResult } from '../schema/prompts.js'
export type { Resource, ResourceTemplate, ReadResourceResult } from '../schema/resources.js'
export type { ContentBlock, ResourceContents } from '../schema/content.js'
export type { InputRequiredResult, InputRequests } from '../schema/mrtr.js'
export type { InitializeResult, DiscoverResult } from '../schema/lifecycle.js'
export type { CompleteResult } from '../schema/completions.js'

export type ListToolsResult = Static<typeof ListToolsResultSchema>
export type ListPromptsResult = Static<typeof ListPromptsResultSchema>
export type ListResourcesResult = Static<typeof ListResourcesResultSchema>
export type ListResourceTemplatesResult = Static<typeof ListResourceTemplatesResultSchema>
/** `resultType: 'task'`: the call runs as a task (answered 202). */
export type CreateTaskResult = Static<typeof CreateTaskResultSchema>
/** `GET /tasks/{taskId}`: the task with its result, error or open `inputRequests`. */
export type Task = Static<typeof DetailedTaskSchema>

/** One page of each list, by its path. */
export interface ListPages {
  '/tools': ListToolsResult
  '/prompts': ListPromptsResult
  '/resources': ListResourcesResult
  '/resources/templates': ListResourceTemplatesResult
}

/** The items of each list, by its path. */
export interface ListItems {
  '/tools': Tool
  '/prompts': Prompt
  '/resources': Resource
  '/resources/templates': ResourceTemplate
}
