/* eslint-disable */
// Generated from the platform OpenAPI documents and resource kinds by
// `npm run --silent cli -- console-api --write` (src/console/api-types.ts). Do not edit:
// tests/console/api-types.test.ts fails when this file is stale.

export type ErrorBody = {
  detail: string
  code: string
  errors?: Array<{
    path: string
    message: string
  }>
}

/** A Server-Sent Events answer: read it with openEventStream (console/src/api/sse.ts). */
export type EventStream = { readonly stream: 'text/event-stream' }

/** Every operation of the platform API, by route id. */
export interface Operations {
  "system.health": {
    method: "GET"
    path: "/health"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      status: "ok"
      nats: string
      version: string
    }
  }
  "auth.info": {
    method: "GET"
    path: "/auth/info"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      auth_mode: string
    }
  }
  "auth.login": {
    method: "POST"
    path: "/auth/login"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      email: string
      password?: string
    }
    status: 200
    response: {
      access_token: string
      refresh_token: string
      token_type: "bearer"
      expires_in: number
      user: {
        id: string
        email: string
        roles: string[]
        last_login_at: string | null
        created_at: string
      }
    } | {
      message: string
      session_id: string
    }
  }
  "auth.verify-otp": {
    method: "POST"
    path: "/auth/verify-otp"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      session_id: string
      otp_code: string
    }
    status: 200
    response: {
      access_token: string
      refresh_token: string
      token_type: "bearer"
      expires_in: number
      user: {
        id: string
        email: string
        roles: string[]
        last_login_at: string | null
        created_at: string
      }
    }
  }
  "auth.refresh": {
    method: "POST"
    path: "/auth/refresh"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      refresh_token: string
    }
    status: 200
    response: {
      access_token: string
      refresh_token: string
      token_type: "bearer"
      expires_in: number
    }
  }
  "auth.logout": {
    method: "POST"
    path: "/auth/logout"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      refresh_token: string
    }
    status: 204
    response: void
  }
  "auth.me": {
    method: "GET"
    path: "/auth/me"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      email: string
      roles: string[]
      last_login_at: string | null
      created_at: string
    }
  }
  "auth.exchange": {
    method: "POST"
    path: "/auth/token/exchange"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      provider: string
      subject: string
      email: string
      auto_provision?: boolean
    }
    status: 200
    response: {
      access_token: string
      refresh_token: string
      token_type: "bearer"
      expires_in: number
      user: {
        id: string
        email: string
        roles: string[]
        last_login_at: string | null
        created_at: string
      }
      provisioned: boolean
    }
  }
  "auth.check-permissions": {
    method: "POST"
    path: "/auth/check-permissions"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      permissions: string[]
      logic?: "AND" | "OR"
    }
    status: 200
    response: {
      result: boolean
      logic: string
      checks: Array<{
        permission: string
        has_permission: boolean
      }>
    }
  }
  "jobs.get": {
    method: "GET"
    path: "/jobs/{job_id}"
    params: {
      job_id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      job_id: string
      execution_id: string
      status: "scheduled" | "queued" | "running" | "completed" | "failed" | "cancelled"
      pool: string
      kind: string
      namespace: string
      name: string
      attempts: number
      error: string | null
      created_at: string
      started_at: string | null
      finished_at: string | null
      due_at?: string
    }
  }
  "jobs.result": {
    method: "GET"
    path: "/jobs/{job_id}/result"
    params: {
      job_id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: unknown
  }
  "executions.get": {
    method: "GET"
    path: "/executions/{execution_id}"
    params: {
      execution_id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      execution_id: string
      function: {
        namespace: string
        name: string
      }
      kind: string
      pool: string
      trigger_type: string
      trigger_id: string
      chat_id: string | null
      parent_id: string | null
      user_id: string | null
      status: "scheduled" | "queued" | "running" | "completed" | "failed" | "cancelled"
      attempts: number
      input_data: unknown
      output_data: unknown
      output: string | null
      error: string | null
      retry_of: string | null
      created_at: string
      started_at: string | null
      finished_at: string | null
      duration_ms: number | null
      callback_status: string | null
      callback_response_code: number | null
    }
  }
  "executions.list": {
    method: "GET"
    path: "/executions"
    params: Record<string, never>
    query: {
      kind?: string
      namespace?: string
      name?: string
      status?: "scheduled" | "queued" | "running" | "completed" | "failed" | "cancelled"
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      execution_id: string
      function: {
        namespace: string
        name: string
      }
      kind: string
      pool: string
      trigger_type: string
      trigger_id: string
      chat_id: string | null
      parent_id: string | null
      user_id: string | null
      status: "scheduled" | "queued" | "running" | "completed" | "failed" | "cancelled"
      attempts: number
      input_data: unknown
      output_data: unknown
      output: string | null
      error: string | null
      retry_of: string | null
      created_at: string
      started_at: string | null
      finished_at: string | null
      duration_ms: number | null
      callback_status: string | null
      callback_response_code: number | null
    }>
  }
  "functions.execute": {
    method: "POST"
    path: "/functions/{namespace}/{name}/execute"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      input: unknown
      timeout?: number
    }
    status: 200
    response: {
      status: "success" | "error" | "timeout"
      execution_id: string
      result: unknown
      error: string | null
      output?: string
      duration_ms?: number
    }
  }
  "functions.execute-async": {
    method: "POST"
    path: "/functions/{namespace}/{name}/execute/async"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      input: unknown
      trigger_id?: string
      delay_seconds?: number | null
      callback_url?: string
    }
    status: 202
    response: {
      execution_id: string
      status: "queued"
    }
  }
  "chats.create": {
    method: "POST"
    path: "/agents/{namespace}/{name}/chats"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      input?: Record<string, unknown>
      title?: string
      expires_in?: number
    }
    status: 201
    response: {
      id: string
      user_id: string
      agent_namespace: string
      agent_name: string
      title: string | null
      input: Record<string, unknown>
      archived: boolean
      session_key: string | null
      expires_at: string | null
      active_channel_id: string | null
      created_at: string
      updated_at: string
      last_message_at: string | null
    }
  }
  "chats.list": {
    method: "GET"
    path: "/chats"
    params: Record<string, never>
    query: {
      include_archived?: boolean
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      user_id: string
      agent_namespace: string
      agent_name: string
      title: string | null
      input: Record<string, unknown>
      archived: boolean
      session_key: string | null
      expires_at: string | null
      active_channel_id: string | null
      created_at: string
      updated_at: string
      last_message_at: string | null
    }>
  }
  "chats.get": {
    method: "GET"
    path: "/chats/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      user_id: string
      agent_namespace: string
      agent_name: string
      title: string | null
      input: Record<string, unknown>
      archived: boolean
      session_key: string | null
      expires_at: string | null
      active_channel_id: string | null
      created_at: string
      updated_at: string
      last_message_at: string | null
    } & {
      messages: Array<{
        id: string
        chat_id: string
        role: "user" | "assistant" | "system" | "tool"
        content: string | null
        tool_calls: Array<{
          id: string
          type: "function"
          function: {
            name: string
            arguments: string
          }
        }> | null
        tool_call_id: string | null
        name: string | null
        created_at: string
      }>
      pending_approvals: Array<{
        tool_call_id: string
        function_namespace: string
        function_name: string
        arguments: Record<string, unknown>
      }>
    }
  }
  "chats.update": {
    method: "PUT"
    path: "/chats/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: {
      archived?: boolean
      title?: string | null
    }
    status: 200
    response: {
      id: string
      user_id: string
      agent_namespace: string
      agent_name: string
      title: string | null
      input: Record<string, unknown>
      archived: boolean
      session_key: string | null
      expires_at: string | null
      active_channel_id: string | null
      created_at: string
      updated_at: string
      last_message_at: string | null
    }
  }
  "chats.delete": {
    method: "DELETE"
    path: "/chats/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "chats.send": {
    method: "POST"
    path: "/chats/{id}/messages"
    params: {
      id: string
    }
    query: Record<string, never>
    body: {
      content: string
    }
    status: 200
    response: {
      id: string
      chat_id: string
      role: "user" | "assistant" | "system" | "tool"
      content: string | null
      tool_calls: Array<{
        id: string
        type: "function"
        function: {
          name: string
          arguments: string
        }
      }> | null
      tool_call_id: string | null
      name: string | null
      created_at: string
    } & {
      status: string
    }
  }
  "chats.send-stream": {
    method: "POST"
    path: "/chats/{id}/messages/stream"
    params: {
      id: string
    }
    query: {
      last_id?: number
    }
    body: {
      content: string
    }
    status: 200
    response: EventStream
  }
  "chats.stream": {
    method: "GET"
    path: "/chats/{id}/stream/{channel_id}"
    params: {
      id: string
      channel_id: string
    }
    query: {
      last_id?: number
    }
    body: never
    status: 200
    response: EventStream
  }
  "chats.cancel": {
    method: "POST"
    path: "/chats/{id}/cancel"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      status: "cancelled"
      job_id: string
    } | {
      status: "idle"
    }
  }
  "chats.approve-tool": {
    method: "POST"
    path: "/chats/{id}/approve-tool/{tool_call_id}"
    params: {
      id: string
      tool_call_id: string
    }
    query: Record<string, never>
    body: {
      approved: boolean
    }
    status: 202
    response: {
      status: "approved" | "rejected"
      tool_call_id: string
      channel_id: string
    }
  }
  "agents.invoke": {
    method: "POST"
    path: "/agents/{namespace}/{name}/invoke"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      message: string
      session_key?: string
      reset?: boolean
      input?: Record<string, unknown>
    }
    status: 200
    response: {
      reply: string
      chat_id: string
      session_key: string | null
    }
  }
  "states.list": {
    method: "GET"
    path: "/stores/{namespace}/{name}/states"
    params: {
      namespace: string
      name: string
    }
    query: {
      search?: string
      tags?: string
      owner?: string | "me"
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      store: string
      key: string
      value: unknown
      visibility: "private" | "shared"
      description: string
      tags: string[]
      owner_id: string | null
      expires_at: string | null
      created_at: string
      updated_at: string
      warnings?: Array<{
        path: string
        message: string
      }>
    }>
  }
  "states.create": {
    method: "POST"
    path: "/stores/{namespace}/{name}/states"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      key: string
      value: unknown
      visibility?: "private" | "shared"
      description?: string
      tags?: string[]
      expires_at?: string | null
    }
    status: 201
    response: {
      id: string
      store: string
      key: string
      value: unknown
      visibility: "private" | "shared"
      description: string
      tags: string[]
      owner_id: string | null
      expires_at: string | null
      created_at: string
      updated_at: string
      warnings?: Array<{
        path: string
        message: string
      }>
    }
  }
  "states.get": {
    method: "GET"
    path: "/stores/{namespace}/{name}/states/{key}"
    params: {
      namespace: string
      name: string
      key: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      store: string
      key: string
      value: unknown
      visibility: "private" | "shared"
      description: string
      tags: string[]
      owner_id: string | null
      expires_at: string | null
      created_at: string
      updated_at: string
      warnings?: Array<{
        path: string
        message: string
      }>
    }
  }
  "states.put": {
    method: "PUT"
    path: "/stores/{namespace}/{name}/states/{key}"
    params: {
      namespace: string
      name: string
      key: string
    }
    query: Record<string, never>
    body: {
      value?: unknown
      visibility?: "private" | "shared"
      description?: string
      tags?: string[]
      expires_at?: string | null
    }
    status: 200
    response: {
      id: string
      store: string
      key: string
      value: unknown
      visibility: "private" | "shared"
      description: string
      tags: string[]
      owner_id: string | null
      expires_at: string | null
      created_at: string
      updated_at: string
      warnings?: Array<{
        path: string
        message: string
      }>
    }
  }
  "states.delete": {
    method: "DELETE"
    path: "/stores/{namespace}/{name}/states/{key}"
    params: {
      namespace: string
      name: string
      key: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "states.group.list": {
    method: "GET"
    path: "/states/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: {
      search?: string
      tags?: string
      owner?: string | "me"
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      store: string
      key: string
      value: unknown
      visibility: "private" | "shared"
      description: string
      tags: string[]
      owner_id: string | null
      expires_at: string | null
      created_at: string
      updated_at: string
      warnings?: Array<{
        path: string
        message: string
      }>
    }>
  }
  "states.group.create": {
    method: "POST"
    path: "/states/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      key: string
      value: unknown
      visibility?: "private" | "shared"
      description?: string
      tags?: string[]
      expires_at?: string | null
    }
    status: 201
    response: {
      id: string
      store: string
      key: string
      value: unknown
      visibility: "private" | "shared"
      description: string
      tags: string[]
      owner_id: string | null
      expires_at: string | null
      created_at: string
      updated_at: string
      warnings?: Array<{
        path: string
        message: string
      }>
    }
  }
  "states.group.get": {
    method: "GET"
    path: "/states/{namespace}/{name}/{key}"
    params: {
      namespace: string
      name: string
      key: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      store: string
      key: string
      value: unknown
      visibility: "private" | "shared"
      description: string
      tags: string[]
      owner_id: string | null
      expires_at: string | null
      created_at: string
      updated_at: string
      warnings?: Array<{
        path: string
        message: string
      }>
    }
  }
  "states.group.put": {
    method: "PUT"
    path: "/states/{namespace}/{name}/{key}"
    params: {
      namespace: string
      name: string
      key: string
    }
    query: Record<string, never>
    body: {
      value?: unknown
      visibility?: "private" | "shared"
      description?: string
      tags?: string[]
      expires_at?: string | null
    }
    status: 200
    response: {
      id: string
      store: string
      key: string
      value: unknown
      visibility: "private" | "shared"
      description: string
      tags: string[]
      owner_id: string | null
      expires_at: string | null
      created_at: string
      updated_at: string
      warnings?: Array<{
        path: string
        message: string
      }>
    }
  }
  "states.group.delete": {
    method: "DELETE"
    path: "/states/{namespace}/{name}/{key}"
    params: {
      namespace: string
      name: string
      key: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "templates.render": {
    method: "POST"
    path: "/templates/{id}/render"
    params: {
      id: string
    }
    query: Record<string, never>
    body: {
      variables?: Record<string, unknown>
    }
    status: 200
    response: {
      title: string | null
      html_content: string
      text_content: string | null
    }
  }
  "templates.send": {
    method: "POST"
    path: "/templates/{id}/send"
    params: {
      id: string
    }
    query: Record<string, never>
    body: {
      to: string | string[]
      variables?: Record<string, unknown>
      from_name?: string
    }
    status: 200
    response: {
      status: "sent"
      message_id: string
      recipients: string[]
      rejected: string[]
    }
  }
  "discovery.list": {
    method: "GET"
    path: "/discovery/{type}"
    params: {
      type: "agents" | "functions" | "skills" | "collections" | "templates"
    }
    query: {
      app?: string
    }
    body: never
    status: 200
    response: Array<{
      id: string
      namespace: string
      name: string
      [key: string]: unknown
    }>
  }
  "manifests.status": {
    method: "GET"
    path: "/api/runtime/manifests/{namespace}/{name}/status"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      ready: boolean
      resources: {
        satisfied: Array<{
          type: string
          namespace: string
          name: string
          exists: boolean
        }>
        missing: Array<{
          type: string
          namespace: string
          name: string
          exists: boolean
        }>
      }
      permissions: {
        required: {
          granted: string[]
          missing: string[]
        }
        optional: {
          granted: string[]
          missing: string[]
        }
      }
      stores: {
        satisfied: Array<{
          store: string
          key: string | null
          exists: boolean
          key_checked: boolean
        }>
        missing: Array<{
          store: string
          key: string | null
          exists: boolean
          key_checked: boolean
        }>
      }
    }
  }
  "manifests.status-runtime": {
    method: "GET"
    path: "/manifests/{namespace}/{name}/status"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      ready: boolean
      resources: {
        satisfied: Array<{
          type: string
          namespace: string
          name: string
          exists: boolean
        }>
        missing: Array<{
          type: string
          namespace: string
          name: string
          exists: boolean
        }>
      }
      permissions: {
        required: {
          granted: string[]
          missing: string[]
        }
        optional: {
          granted: string[]
          missing: string[]
        }
      }
      stores: {
        satisfied: Array<{
          store: string
          key: string | null
          exists: boolean
          key_checked: boolean
        }>
        missing: Array<{
          store: string
          key: string | null
          exists: boolean
          key_checked: boolean
        }>
      }
    }
  }
  "components.renderable": {
    method: "GET"
    path: "/components"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      namespace: string
      name: string
      title: string
      description: string
      visibility: string
      owner_id: string | null
      render_url: string
    }>
  }
  "components.render": {
    method: "GET"
    path: "/components/{namespace}/{name}/render"
    params: {
      namespace: string
      name: string
    }
    query: {
      input?: string
    }
    body: never
    status: 200
    response: string
  }
  "components.view.embed": {
    method: "GET"
    path: "/components/view/embed/{target_namespace}/{target_name}"
    params: {
      target_namespace: string
      target_name: string
    }
    query: {
      ticket: string
      input?: string
    }
    body: never
    status: 200
    response: string
  }
  "components.shared": {
    method: "GET"
    path: "/components/shared/{token}"
    params: {
      token: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: string
  }
  "components.proxy.functions": {
    method: "POST"
    path: "/components/{namespace}/{name}/proxy/functions/{target_namespace}/{target_name}/execute"
    params: {
      namespace: string
      name: string
      target_namespace: string
      target_name: string
    }
    query: Record<string, never>
    body: {
      input: unknown
      timeout?: number
    }
    status: 200
    response: {
      status: "success" | "error" | "timeout"
      execution_id: string
      result: unknown
      error: string | null
      output?: string
      duration_ms?: number
    }
  }
  "components.proxy.agents": {
    method: "POST"
    path: "/components/{namespace}/{name}/proxy/agents/{target_namespace}/{target_name}/invoke"
    params: {
      namespace: string
      name: string
      target_namespace: string
      target_name: string
    }
    query: Record<string, never>
    body: {
      message: string
      session_key?: string
      reset?: boolean
      input?: Record<string, unknown>
    }
    status: 200
    response: {
      reply: string
      chat_id: string
      session_key: string | null
    }
  }
  "components.proxy.queries": {
    method: "POST"
    path: "/components/{namespace}/{name}/proxy/queries/{target_namespace}/{target_name}/execute"
    params: {
      namespace: string
      name: string
      target_namespace: string
      target_name: string
    }
    query: Record<string, never>
    body: {
      input?: Record<string, unknown>
    }
    status: 200
    response: void
  }
  "components.proxy.states": {
    method: "POST"
    path: "/components/{namespace}/{name}/proxy/states/{target_namespace}"
    params: {
      namespace: string
      name: string
      target_namespace: string
    }
    query: Record<string, never>
    body: {
      store: string
      action: "list" | "get" | "set" | "delete"
      key?: string
      value?: unknown
    }
    status: 200
    response: void
  }
  "components.view.functions": {
    method: "POST"
    path: "/components/view/functions/{target_namespace}/{target_name}/execute"
    params: {
      target_namespace: string
      target_name: string
    }
    query: Record<string, never>
    body: {
      input: unknown
      timeout?: number
      ticket: string
    }
    status: 200
    response: {
      status: "success" | "error" | "timeout"
      execution_id: string
      result: unknown
      error: string | null
      output?: string
      duration_ms?: number
    }
  }
  "components.view.agents": {
    method: "POST"
    path: "/components/view/agents/{target_namespace}/{target_name}/invoke"
    params: {
      target_namespace: string
      target_name: string
    }
    query: Record<string, never>
    body: {
      message: string
      session_key?: string
      reset?: boolean
      input?: Record<string, unknown>
      ticket: string
    }
    status: 200
    response: {
      reply: string
      chat_id: string
      session_key: string | null
    }
  }
  "components.view.queries": {
    method: "POST"
    path: "/components/view/queries/{target_namespace}/{target_name}/execute"
    params: {
      target_namespace: string
      target_name: string
    }
    query: Record<string, never>
    body: {
      input?: Record<string, unknown>
      ticket: string
    }
    status: 200
    response: void
  }
  "components.view.states": {
    method: "POST"
    path: "/components/view/states/{target_namespace}"
    params: {
      target_namespace: string
    }
    query: Record<string, never>
    body: {
      store: string
      action: "list" | "get" | "set" | "delete"
      key?: string
      value?: unknown
      ticket: string
    }
    status: 200
    response: void
  }
  "queries.execute": {
    method: "POST"
    path: "/queries/{namespace}/{name}/execute"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      input: Record<string, unknown>
    }
    status: 200
    response: {
      operation: "read" | "write"
      rows: Array<Record<string, unknown>>
      row_count: number
      affected_rows?: number | null
      truncated: boolean
      duration_ms: number
    }
  }
  "files.upload": {
    method: "POST"
    path: "/files/{namespace}/{collection}"
    params: {
      namespace: string
      collection: string
    }
    query: {
      name?: string
      visibility?: "private" | "shared"
      file_metadata?: string
      update_existing?: boolean
    }
    body: {
      name: string
      content_base64: string
      content_type?: string
      visibility?: "private" | "shared"
      file_metadata?: Record<string, unknown>
      update_existing?: boolean
    }
    status: 201
    response: {
      id: string
      namespace: string
      collection: string
      name: string
      content_type: string
      current_version: number
      size_bytes: number
      file_metadata: Record<string, unknown>
      visibility: "private" | "shared"
      owner_id: string | null
      created_at: string
      updated_at: string
      versions: Array<{
        version: number
        size_bytes: number
        hash_sha256: string
        content_type: string
        uploaded_by: string | null
        created_at: string
      }>
    }
  }
  "files.list": {
    method: "GET"
    path: "/files/{namespace}/{collection}"
    params: {
      namespace: string
      collection: string
    }
    query: {
      limit?: number
      offset?: number
      prefix?: string
    }
    body: never
    status: 200
    response: Array<{
      id: string
      namespace: string
      collection: string
      name: string
      content_type: string
      current_version: number
      size_bytes: number
      file_metadata: Record<string, unknown>
      visibility: "private" | "shared"
      owner_id: string | null
      created_at: string
      updated_at: string
      versions: Array<{
        version: number
        size_bytes: number
        hash_sha256: string
        content_type: string
        uploaded_by: string | null
        created_at: string
      }>
    }>
  }
  "files.download": {
    method: "GET"
    path: "/files/{namespace}/{collection}/{filename}"
    params: {
      namespace: string
      collection: string
      filename: string
    }
    query: {
      version?: number
    }
    body: never
    status: 200
    response: void
  }
  "files.update": {
    method: "PATCH"
    path: "/files/{namespace}/{collection}/{filename}"
    params: {
      namespace: string
      collection: string
      filename: string
    }
    query: Record<string, never>
    body: {
      file_metadata?: Record<string, unknown>
      visibility?: "private" | "shared"
    }
    status: 200
    response: {
      id: string
      namespace: string
      collection: string
      name: string
      content_type: string
      current_version: number
      size_bytes: number
      file_metadata: Record<string, unknown>
      visibility: "private" | "shared"
      owner_id: string | null
      created_at: string
      updated_at: string
      versions: Array<{
        version: number
        size_bytes: number
        hash_sha256: string
        content_type: string
        uploaded_by: string | null
        created_at: string
      }>
    }
  }
  "files.delete": {
    method: "DELETE"
    path: "/files/{namespace}/{collection}/{filename}"
    params: {
      namespace: string
      collection: string
      filename: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "files.info": {
    method: "GET"
    path: "/files/{namespace}/{collection}/{filename}/info"
    params: {
      namespace: string
      collection: string
      filename: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      namespace: string
      collection: string
      name: string
      content_type: string
      current_version: number
      size_bytes: number
      file_metadata: Record<string, unknown>
      visibility: "private" | "shared"
      owner_id: string | null
      created_at: string
      updated_at: string
      versions: Array<{
        version: number
        size_bytes: number
        hash_sha256: string
        content_type: string
        uploaded_by: string | null
        created_at: string
      }>
    }
  }
  "files.url": {
    method: "POST"
    path: "/files/{namespace}/{collection}/{filename}/url"
    params: {
      namespace: string
      collection: string
      filename: string
    }
    query: Record<string, never>
    body: {
      expires_in?: number
      version?: number
    }
    status: 200
    response: {
      url: string
      expires_in: number
      version: number
    }
  }
  "files.search": {
    method: "POST"
    path: "/files/{namespace}/{collection}/search"
    params: {
      namespace: string
      collection: string
    }
    query: Record<string, never>
    body: {
      query?: string
      metadata_filter?: Record<string, unknown>
      limit?: number
    }
    status: 200
    response: Array<{
      filename: string
      version: number
      matches: Array<{
        line: number
        text: string
      }>
    }>
  }
  "files.signed": {
    method: "GET"
    path: "/files/_signed/{token}"
    params: {
      token: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: void
  }
  "webhooks.trigger.get": {
    method: "GET"
    path: "/webhooks/{path}"
    params: {
      path: string
    }
    query: {
      async?: "1" | "true"
    }
    body: never
    status: 200
    response: unknown
  }
  "webhooks.trigger.post": {
    method: "POST"
    path: "/webhooks/{path}"
    params: {
      path: string
    }
    query: {
      async?: "1" | "true"
    }
    body: Record<string, unknown>
    status: 200
    response: unknown
  }
  "webhooks.trigger.put": {
    method: "PUT"
    path: "/webhooks/{path}"
    params: {
      path: string
    }
    query: {
      async?: "1" | "true"
    }
    body: Record<string, unknown>
    status: 200
    response: unknown
  }
  "webhooks.trigger.patch": {
    method: "PATCH"
    path: "/webhooks/{path}"
    params: {
      path: string
    }
    query: {
      async?: "1" | "true"
    }
    body: Record<string, unknown>
    status: 200
    response: unknown
  }
  "webhooks.trigger.delete": {
    method: "DELETE"
    path: "/webhooks/{path}"
    params: {
      path: string
    }
    query: {
      async?: "1" | "true"
    }
    body: never
    status: 200
    response: unknown
  }
  "mcp.post": {
    method: "POST"
    path: "/mcp"
    params: Record<string, never>
    query: {
      namespace?: string
    }
    body: {
      jsonrpc: "2.0"
      id?: string | number
      method: string
      params?: Record<string, unknown>
    } | {
      jsonrpc: "2.0"
      id: string | number | null
      result?: unknown
      error?: Record<string, unknown>
    } | unknown[]
    status: 200
    response: EventStream
  }
  "mcp.post-namespace": {
    method: "POST"
    path: "/mcp/{namespace}"
    params: {
      namespace: string
    }
    query: {
      namespace?: string
    }
    body: {
      jsonrpc: "2.0"
      id?: string | number
      method: string
      params?: Record<string, unknown>
    } | {
      jsonrpc: "2.0"
      id: string | number | null
      result?: unknown
      error?: Record<string, unknown>
    } | unknown[]
    status: 200
    response: EventStream
  }
  "mcp.protected-resource": {
    method: "GET"
    path: "/.well-known/oauth-protected-resource"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      resource: string
      authorization_servers: string[]
      bearer_methods_supported: string[]
      resource_name: string
      resource_documentation?: string
    }
  }
  "system.health.report": {
    method: "GET"
    path: "/api/v1/system/health"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      status: "ok" | "info" | "warning" | "critical"
      checked_at: string
      duration_ms: number
      services: Array<{
        name: string
        kind: "infrastructure" | "application"
        status: "up" | "down" | "unknown"
        health: "healthy" | "degraded" | "unhealthy" | "unknown"
        reason: string | null
        version: string | null
        instances: number | null
        uptime_seconds: number | null
        cpu_percent: number | null
        memory_bytes: number | null
        details: Record<string, unknown>
      }>
      host: {
        hostname: string
        cpu: {
          count: number
          load_1m: number
          load_5m: number
          load_15m: number
          used_percent: number | null
        }
        memory: {
          total_bytes: number
          available_bytes: number
          used_percent: number
        }
        disk: {
          path: string
          total_bytes: number | null
          available_bytes: number | null
          used_percent: number | null
          error: string | null
        }
      }
      warnings: Array<{
        level: "critical" | "warning" | "info"
        service?: string
        message: string
        value: number
        threshold: number
      }>
    }
  }
  "system.actors": {
    method: "GET"
    path: "/api/v1/system/actors"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      lease_ttl_ms: number | null
      hosts: Array<{
        node_id: string
        state: "active" | "draining" | "drained" | "gone"
        last_seen: string | null
        drain_requested_at: string | null
        partitions: number
      }>
      types: Array<{
        type: string
        partitions: number
        owned: number
        backlog: number
        shards: Array<{
          partition: number
          owner: string | null
          fence: number | null
          lease_age_ms: number | null
          backlog: number | null
          oldest_age_ms: number | null
        }>
      }>
    }
  }
  "system.actors.hosts": {
    method: "GET"
    path: "/api/v1/system/actors/hosts"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      lease_ttl_ms: number | null
      tick_ms: number | null
      hosts: Array<{
        node_id: string
        state: "active" | "draining" | "drained" | "gone"
        last_seen: string | null
        drain_requested_at: string | null
        partitions: number
        owned: Array<{
          type: string
          partition: number
          fence: number
          lease_age_ms: number
          backlog: number | null
          oldest_age_ms: number | null
        }>
      }>
    }
  }
  "system.actors.drain": {
    method: "POST"
    path: "/api/v1/system/actors/hosts/{node_id}/drain"
    params: {
      node_id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      node_id: string
      state: "active" | "draining" | "drained" | "gone"
      drain_requested_at: string | null
    }
  }
  "system.actors.undrain": {
    method: "POST"
    path: "/api/v1/system/actors/hosts/{node_id}/undrain"
    params: {
      node_id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      node_id: string
      state: "active" | "draining" | "drained" | "gone"
      drain_requested_at: string | null
    }
  }
  "agents.create": {
    method: "POST"
    path: "/api/v1/agents"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      description?: string
      llm_provider_id?: string | null
      model?: string | null
      system_prompt?: string
      temperature?: number
      max_tokens?: number | null
      input_schema?: Record<string, unknown>
      output_schema?: Record<string, unknown>
      initial_messages?: Array<{
        role: "system" | "user" | "assistant"
        content: string
      }>
      enabled_functions?: string[]
      function_parameters?: Record<string, Record<string, unknown>>
      enabled_agents?: string[]
      enabled_skills?: Array<string | {
        skill: string
        preload: boolean
      }>
      enabled_queries?: string[]
      query_parameters?: Record<string, Record<string, {
            value: unknown
            locked: boolean
          }>>
      enabled_collections?: Array<string | {
        collection: string
        access: "readonly" | "readwrite"
      }>
      enabled_stores?: Array<{
        store: string
        access: "readonly" | "readwrite"
      }>
      enabled_connectors?: Array<{
        connector: string
        operations: string[]
        parameters?: Record<string, Record<string, unknown>>
      }>
      enabled_mcp_servers?: Array<{
        server: string
        tools?: string[]
        parameters?: Record<string, Record<string, unknown>>
      }>
      hooks?: {
        on_user_message: Array<{
          function: string
          async: boolean
          on_timeout: "block" | "passthrough"
        }>
        on_assistant_message: Array<{
          function: string
          async: boolean
          on_timeout: "block" | "passthrough"
        }>
      }
      system_tools?: Array<string | {
        name: string
        [key: string]: unknown
      }>
      icon?: string | null
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      llm_provider_id: string | null
      model: string | null
      system_prompt: string
      temperature: number
      max_tokens: number | null
      input_schema: Record<string, unknown>
      output_schema: Record<string, unknown>
      initial_messages: Array<{
        role: "system" | "user" | "assistant"
        content: string
      }>
      enabled_functions: string[]
      function_parameters: Record<string, Record<string, unknown>>
      enabled_agents: string[]
      enabled_skills: Array<string | {
        skill: string
        preload: boolean
      }>
      enabled_queries: string[]
      query_parameters: Record<string, Record<string, {
            value: unknown
            locked: boolean
          }>>
      enabled_collections: Array<string | {
        collection: string
        access: "readonly" | "readwrite"
      }>
      enabled_stores: Array<{
        store: string
        access: "readonly" | "readwrite"
      }>
      enabled_connectors: Array<{
        connector: string
        operations: string[]
        parameters?: Record<string, Record<string, unknown>>
      }>
      enabled_mcp_servers: Array<{
        server: string
        tools?: string[]
        parameters?: Record<string, Record<string, unknown>>
      }>
      hooks: {
        on_user_message: Array<{
          function: string
          async: boolean
          on_timeout: "block" | "passthrough"
        }>
        on_assistant_message: Array<{
          function: string
          async: boolean
          on_timeout: "block" | "passthrough"
        }>
      }
      system_tools: Array<string | {
        name: string
        [key: string]: unknown
      }>
      icon: string | null
    }
  }
  "agents.list": {
    method: "GET"
    path: "/api/v1/agents"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      llm_provider_id: string | null
      model: string | null
      system_prompt: string
      temperature: number
      max_tokens: number | null
      input_schema: Record<string, unknown>
      output_schema: Record<string, unknown>
      initial_messages: Array<{
        role: "system" | "user" | "assistant"
        content: string
      }>
      enabled_functions: string[]
      function_parameters: Record<string, Record<string, unknown>>
      enabled_agents: string[]
      enabled_skills: Array<string | {
        skill: string
        preload: boolean
      }>
      enabled_queries: string[]
      query_parameters: Record<string, Record<string, {
            value: unknown
            locked: boolean
          }>>
      enabled_collections: Array<string | {
        collection: string
        access: "readonly" | "readwrite"
      }>
      enabled_stores: Array<{
        store: string
        access: "readonly" | "readwrite"
      }>
      enabled_connectors: Array<{
        connector: string
        operations: string[]
        parameters?: Record<string, Record<string, unknown>>
      }>
      enabled_mcp_servers: Array<{
        server: string
        tools?: string[]
        parameters?: Record<string, Record<string, unknown>>
      }>
      hooks: {
        on_user_message: Array<{
          function: string
          async: boolean
          on_timeout: "block" | "passthrough"
        }>
        on_assistant_message: Array<{
          function: string
          async: boolean
          on_timeout: "block" | "passthrough"
        }>
      }
      system_tools: Array<string | {
        name: string
        [key: string]: unknown
      }>
      icon: string | null
    }>
  }
  "agents.get": {
    method: "GET"
    path: "/api/v1/agents/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      llm_provider_id: string | null
      model: string | null
      system_prompt: string
      temperature: number
      max_tokens: number | null
      input_schema: Record<string, unknown>
      output_schema: Record<string, unknown>
      initial_messages: Array<{
        role: "system" | "user" | "assistant"
        content: string
      }>
      enabled_functions: string[]
      function_parameters: Record<string, Record<string, unknown>>
      enabled_agents: string[]
      enabled_skills: Array<string | {
        skill: string
        preload: boolean
      }>
      enabled_queries: string[]
      query_parameters: Record<string, Record<string, {
            value: unknown
            locked: boolean
          }>>
      enabled_collections: Array<string | {
        collection: string
        access: "readonly" | "readwrite"
      }>
      enabled_stores: Array<{
        store: string
        access: "readonly" | "readwrite"
      }>
      enabled_connectors: Array<{
        connector: string
        operations: string[]
        parameters?: Record<string, Record<string, unknown>>
      }>
      enabled_mcp_servers: Array<{
        server: string
        tools?: string[]
        parameters?: Record<string, Record<string, unknown>>
      }>
      hooks: {
        on_user_message: Array<{
          function: string
          async: boolean
          on_timeout: "block" | "passthrough"
        }>
        on_assistant_message: Array<{
          function: string
          async: boolean
          on_timeout: "block" | "passthrough"
        }>
      }
      system_tools: Array<string | {
        name: string
        [key: string]: unknown
      }>
      icon: string | null
    }
  }
  "agents.update": {
    method: "PUT"
    path: "/api/v1/agents/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      description?: string
      llm_provider_id?: string | null
      model?: string | null
      system_prompt?: string
      temperature?: number
      max_tokens?: number | null
      input_schema?: Record<string, unknown>
      output_schema?: Record<string, unknown>
      initial_messages?: Array<{
        role: "system" | "user" | "assistant"
        content: string
      }>
      enabled_functions?: string[]
      function_parameters?: Record<string, Record<string, unknown>>
      enabled_agents?: string[]
      enabled_skills?: Array<string | {
        skill: string
        preload: boolean
      }>
      enabled_queries?: string[]
      query_parameters?: Record<string, Record<string, {
            value: unknown
            locked: boolean
          }>>
      enabled_collections?: Array<string | {
        collection: string
        access: "readonly" | "readwrite"
      }>
      enabled_stores?: Array<{
        store: string
        access: "readonly" | "readwrite"
      }>
      enabled_connectors?: Array<{
        connector: string
        operations: string[]
        parameters?: Record<string, Record<string, unknown>>
      }>
      enabled_mcp_servers?: Array<{
        server: string
        tools?: string[]
        parameters?: Record<string, Record<string, unknown>>
      }>
      hooks?: {
        on_user_message: Array<{
          function: string
          async: boolean
          on_timeout: "block" | "passthrough"
        }>
        on_assistant_message: Array<{
          function: string
          async: boolean
          on_timeout: "block" | "passthrough"
        }>
      }
      system_tools?: Array<string | {
        name: string
        [key: string]: unknown
      }>
      icon?: string | null
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      llm_provider_id: string | null
      model: string | null
      system_prompt: string
      temperature: number
      max_tokens: number | null
      input_schema: Record<string, unknown>
      output_schema: Record<string, unknown>
      initial_messages: Array<{
        role: "system" | "user" | "assistant"
        content: string
      }>
      enabled_functions: string[]
      function_parameters: Record<string, Record<string, unknown>>
      enabled_agents: string[]
      enabled_skills: Array<string | {
        skill: string
        preload: boolean
      }>
      enabled_queries: string[]
      query_parameters: Record<string, Record<string, {
            value: unknown
            locked: boolean
          }>>
      enabled_collections: Array<string | {
        collection: string
        access: "readonly" | "readwrite"
      }>
      enabled_stores: Array<{
        store: string
        access: "readonly" | "readwrite"
      }>
      enabled_connectors: Array<{
        connector: string
        operations: string[]
        parameters?: Record<string, Record<string, unknown>>
      }>
      enabled_mcp_servers: Array<{
        server: string
        tools?: string[]
        parameters?: Record<string, Record<string, unknown>>
      }>
      hooks: {
        on_user_message: Array<{
          function: string
          async: boolean
          on_timeout: "block" | "passthrough"
        }>
        on_assistant_message: Array<{
          function: string
          async: boolean
          on_timeout: "block" | "passthrough"
        }>
      }
      system_tools: Array<string | {
        name: string
        [key: string]: unknown
      }>
      icon: string | null
    }
  }
  "agents.delete": {
    method: "DELETE"
    path: "/api/v1/agents/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "functions.create": {
    method: "POST"
    path: "/api/v1/functions"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      description?: string
      code: string
      entrypoint?: string
      input_schema?: Record<string, unknown>
      output_schema?: Record<string, unknown>
      icon?: string | null
      shared_pool?: boolean
      requires_approval?: boolean
      timeout?: number | null
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      code: string
      entrypoint: string
      input_schema: Record<string, unknown>
      output_schema: Record<string, unknown>
      icon: string | null
      shared_pool: boolean
      requires_approval: boolean
      timeout: number | null
    }
  }
  "functions.list": {
    method: "GET"
    path: "/api/v1/functions"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      code: string
      entrypoint: string
      input_schema: Record<string, unknown>
      output_schema: Record<string, unknown>
      icon: string | null
      shared_pool: boolean
      requires_approval: boolean
      timeout: number | null
    }>
  }
  "functions.get": {
    method: "GET"
    path: "/api/v1/functions/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      code: string
      entrypoint: string
      input_schema: Record<string, unknown>
      output_schema: Record<string, unknown>
      icon: string | null
      shared_pool: boolean
      requires_approval: boolean
      timeout: number | null
    }
  }
  "functions.update": {
    method: "PUT"
    path: "/api/v1/functions/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      description?: string
      code?: string
      entrypoint?: string
      input_schema?: Record<string, unknown>
      output_schema?: Record<string, unknown>
      icon?: string | null
      shared_pool?: boolean
      requires_approval?: boolean
      timeout?: number | null
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      code: string
      entrypoint: string
      input_schema: Record<string, unknown>
      output_schema: Record<string, unknown>
      icon: string | null
      shared_pool: boolean
      requires_approval: boolean
      timeout: number | null
    }
  }
  "functions.delete": {
    method: "DELETE"
    path: "/api/v1/functions/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "functions.versions": {
    method: "GET"
    path: "/api/v1/functions/{namespace}/{name}/versions"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: Array<{
      version: number
      fields: Record<string, unknown>
      created_by: string | null
      created_at: string
    }>
  }
  "skills.create": {
    method: "POST"
    path: "/api/v1/skills"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      description?: string
      content?: string
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      content: string
    }
  }
  "skills.list": {
    method: "GET"
    path: "/api/v1/skills"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      content: string
    }>
  }
  "skills.get": {
    method: "GET"
    path: "/api/v1/skills/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      content: string
    }
  }
  "skills.update": {
    method: "PUT"
    path: "/api/v1/skills/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      description?: string
      content?: string
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      content: string
    }
  }
  "skills.delete": {
    method: "DELETE"
    path: "/api/v1/skills/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "llm-providers.create": {
    method: "POST"
    path: "/api/v1/llm-providers"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      name: string
      provider_type: "openai" | "anthropic" | "mistral" | "ollama"
      api_key?: string | null
      api_endpoint?: string | null
      default_model?: string | null
      config?: Record<string, unknown>
      is_default?: boolean
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      name: string
      provider_type: "openai" | "anthropic" | "mistral" | "ollama"
      has_api_key: boolean
      api_endpoint: string | null
      default_model: string | null
      config: Record<string, unknown>
      is_default: boolean
    }
  }
  "llm-providers.list": {
    method: "GET"
    path: "/api/v1/llm-providers"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      name: string
      provider_type: "openai" | "anthropic" | "mistral" | "ollama"
      has_api_key: boolean
      api_endpoint: string | null
      default_model: string | null
      config: Record<string, unknown>
      is_default: boolean
    }>
  }
  "llm-providers.get": {
    method: "GET"
    path: "/api/v1/llm-providers/{name}"
    params: {
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      name: string
      provider_type: "openai" | "anthropic" | "mistral" | "ollama"
      has_api_key: boolean
      api_endpoint: string | null
      default_model: string | null
      config: Record<string, unknown>
      is_default: boolean
    }
  }
  "llm-providers.update": {
    method: "PATCH"
    path: "/api/v1/llm-providers/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: {
      provider_type?: "openai" | "anthropic" | "mistral" | "ollama"
      api_key?: string | null
      api_endpoint?: string | null
      default_model?: string | null
      config?: Record<string, unknown>
      is_default?: boolean
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      name: string
      provider_type: "openai" | "anthropic" | "mistral" | "ollama"
      has_api_key: boolean
      api_endpoint: string | null
      default_model: string | null
      config: Record<string, unknown>
      is_default: boolean
    }
  }
  "llm-providers.delete": {
    method: "DELETE"
    path: "/api/v1/llm-providers/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "secrets.create": {
    method: "POST"
    path: "/api/v1/secrets"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      description?: string
      value?: string
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      has_value: boolean
    }
  }
  "secrets.list": {
    method: "GET"
    path: "/api/v1/secrets"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      has_value: boolean
    }>
  }
  "secrets.get": {
    method: "GET"
    path: "/api/v1/secrets/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      has_value: boolean
    }
  }
  "secrets.update": {
    method: "PUT"
    path: "/api/v1/secrets/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      description?: string
      value?: string
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      has_value: boolean
    }
  }
  "secrets.delete": {
    method: "DELETE"
    path: "/api/v1/secrets/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "stores.create": {
    method: "POST"
    path: "/api/v1/stores"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      description?: string
      schema?: Record<string, unknown> | null
      strict?: boolean
      default_visibility?: "private" | "shared"
      encrypted?: boolean
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      schema: Record<string, unknown> | null
      strict: boolean
      default_visibility: "private" | "shared"
      encrypted: boolean
    }
  }
  "stores.list": {
    method: "GET"
    path: "/api/v1/stores"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      schema: Record<string, unknown> | null
      strict: boolean
      default_visibility: "private" | "shared"
      encrypted: boolean
    }>
  }
  "stores.get": {
    method: "GET"
    path: "/api/v1/stores/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      schema: Record<string, unknown> | null
      strict: boolean
      default_visibility: "private" | "shared"
      encrypted: boolean
    }
  }
  "stores.update": {
    method: "PUT"
    path: "/api/v1/stores/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      description?: string
      schema?: Record<string, unknown> | null
      strict?: boolean
      default_visibility?: "private" | "shared"
      encrypted?: boolean
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      schema: Record<string, unknown> | null
      strict: boolean
      default_visibility: "private" | "shared"
      encrypted: boolean
    }
  }
  "stores.delete": {
    method: "DELETE"
    path: "/api/v1/stores/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "templates.create": {
    method: "POST"
    path: "/api/v1/templates"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      description?: string
      title?: string | null
      html_content: string
      text_content?: string | null
      variable_schema?: Record<string, unknown>
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      title: string | null
      html_content: string
      text_content: string | null
      variable_schema: Record<string, unknown>
    }
  }
  "templates.list": {
    method: "GET"
    path: "/api/v1/templates"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      title: string | null
      html_content: string
      text_content: string | null
      variable_schema: Record<string, unknown>
    }>
  }
  "templates.get": {
    method: "GET"
    path: "/api/v1/templates/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      title: string | null
      html_content: string
      text_content: string | null
      variable_schema: Record<string, unknown>
    }
  }
  "templates.update": {
    method: "PUT"
    path: "/api/v1/templates/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      description?: string
      title?: string | null
      html_content?: string
      text_content?: string | null
      variable_schema?: Record<string, unknown>
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      title: string | null
      html_content: string
      text_content: string | null
      variable_schema: Record<string, unknown>
    }
  }
  "templates.delete": {
    method: "DELETE"
    path: "/api/v1/templates/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "manifests.create": {
    method: "POST"
    path: "/api/v1/manifests"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      description?: string
      required_resources?: Array<{
        type: string
        namespace: string
        name: string
      }>
      required_permissions?: string[]
      optional_permissions?: string[]
      exposed_namespaces?: Record<string, Array<string | "*">>
      store_dependencies?: Array<{
        store: string
        key?: string | null
      }>
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      required_resources: Array<{
        type: string
        namespace: string
        name: string
      }>
      required_permissions: string[]
      optional_permissions: string[]
      exposed_namespaces: Record<string, Array<string | "*">>
      store_dependencies: Array<{
        store: string
        key?: string | null
      }>
    }
  }
  "manifests.list": {
    method: "GET"
    path: "/api/v1/manifests"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      required_resources: Array<{
        type: string
        namespace: string
        name: string
      }>
      required_permissions: string[]
      optional_permissions: string[]
      exposed_namespaces: Record<string, Array<string | "*">>
      store_dependencies: Array<{
        store: string
        key?: string | null
      }>
    }>
  }
  "manifests.get": {
    method: "GET"
    path: "/api/v1/manifests/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      required_resources: Array<{
        type: string
        namespace: string
        name: string
      }>
      required_permissions: string[]
      optional_permissions: string[]
      exposed_namespaces: Record<string, Array<string | "*">>
      store_dependencies: Array<{
        store: string
        key?: string | null
      }>
    }
  }
  "manifests.update": {
    method: "PUT"
    path: "/api/v1/manifests/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      description?: string
      required_resources?: Array<{
        type: string
        namespace: string
        name: string
      }>
      required_permissions?: string[]
      optional_permissions?: string[]
      exposed_namespaces?: Record<string, Array<string | "*">>
      store_dependencies?: Array<{
        store: string
        key?: string | null
      }>
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      required_resources: Array<{
        type: string
        namespace: string
        name: string
      }>
      required_permissions: string[]
      optional_permissions: string[]
      exposed_namespaces: Record<string, Array<string | "*">>
      store_dependencies: Array<{
        store: string
        key?: string | null
      }>
    }
  }
  "manifests.delete": {
    method: "DELETE"
    path: "/api/v1/manifests/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "connectors.create": {
    method: "POST"
    path: "/api/v1/connectors"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      description?: string
      base_url: string
      auth?: {
        type?: "none" | "bearer" | "basic" | "api_key" | "oauth2"
        secret?: string
        header?: string
        query_param?: string
        username?: string
        oauth2?: {
          authorization_url: string
          token_url: string
          revocation_url?: string
          client_id: string
          scopes?: string[]
          redirect_uri?: string
        }
      }
      headers?: Record<string, string>
      timeout_seconds?: number
      retry?: {
        max_retries?: number
        backoff_ms?: number
        on_status?: number[]
      }
      operations?: Array<{
        name: string
        description?: string
        method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS"
        path: string
        parameters?: Record<string, unknown>
        locations?: Record<string, "path" | "query" | "header" | "body">
        body_mapping?: Record<string, string> | null
        body_encoding?: "json" | "form"
      }>
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      base_url: string
      auth: {
        type?: "none" | "bearer" | "basic" | "api_key" | "oauth2"
        secret?: string
        header?: string
        query_param?: string
        username?: string
        oauth2?: {
          authorization_url: string
          token_url: string
          revocation_url?: string
          client_id: string
          scopes?: string[]
          redirect_uri?: string
        }
      }
      headers: Record<string, string>
      timeout_seconds: number
      retry: {
        max_retries?: number
        backoff_ms?: number
        on_status?: number[]
      }
      operations: Array<{
        name: string
        description?: string
        method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS"
        path: string
        parameters?: Record<string, unknown>
        locations?: Record<string, "path" | "query" | "header" | "body">
        body_mapping?: Record<string, string> | null
        body_encoding?: "json" | "form"
      }>
    }
  }
  "connectors.list": {
    method: "GET"
    path: "/api/v1/connectors"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      base_url: string
      auth: {
        type?: "none" | "bearer" | "basic" | "api_key" | "oauth2"
        secret?: string
        header?: string
        query_param?: string
        username?: string
        oauth2?: {
          authorization_url: string
          token_url: string
          revocation_url?: string
          client_id: string
          scopes?: string[]
          redirect_uri?: string
        }
      }
      headers: Record<string, string>
      timeout_seconds: number
      retry: {
        max_retries?: number
        backoff_ms?: number
        on_status?: number[]
      }
      operations: Array<{
        name: string
        description?: string
        method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS"
        path: string
        parameters?: Record<string, unknown>
        locations?: Record<string, "path" | "query" | "header" | "body">
        body_mapping?: Record<string, string> | null
        body_encoding?: "json" | "form"
      }>
    }>
  }
  "connectors.get": {
    method: "GET"
    path: "/api/v1/connectors/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      base_url: string
      auth: {
        type?: "none" | "bearer" | "basic" | "api_key" | "oauth2"
        secret?: string
        header?: string
        query_param?: string
        username?: string
        oauth2?: {
          authorization_url: string
          token_url: string
          revocation_url?: string
          client_id: string
          scopes?: string[]
          redirect_uri?: string
        }
      }
      headers: Record<string, string>
      timeout_seconds: number
      retry: {
        max_retries?: number
        backoff_ms?: number
        on_status?: number[]
      }
      operations: Array<{
        name: string
        description?: string
        method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS"
        path: string
        parameters?: Record<string, unknown>
        locations?: Record<string, "path" | "query" | "header" | "body">
        body_mapping?: Record<string, string> | null
        body_encoding?: "json" | "form"
      }>
    }
  }
  "connectors.update": {
    method: "PUT"
    path: "/api/v1/connectors/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      description?: string
      base_url?: string
      auth?: {
        type?: "none" | "bearer" | "basic" | "api_key" | "oauth2"
        secret?: string
        header?: string
        query_param?: string
        username?: string
        oauth2?: {
          authorization_url: string
          token_url: string
          revocation_url?: string
          client_id: string
          scopes?: string[]
          redirect_uri?: string
        }
      }
      headers?: Record<string, string>
      timeout_seconds?: number
      retry?: {
        max_retries?: number
        backoff_ms?: number
        on_status?: number[]
      }
      operations?: Array<{
        name: string
        description?: string
        method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS"
        path: string
        parameters?: Record<string, unknown>
        locations?: Record<string, "path" | "query" | "header" | "body">
        body_mapping?: Record<string, string> | null
        body_encoding?: "json" | "form"
      }>
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      base_url: string
      auth: {
        type?: "none" | "bearer" | "basic" | "api_key" | "oauth2"
        secret?: string
        header?: string
        query_param?: string
        username?: string
        oauth2?: {
          authorization_url: string
          token_url: string
          revocation_url?: string
          client_id: string
          scopes?: string[]
          redirect_uri?: string
        }
      }
      headers: Record<string, string>
      timeout_seconds: number
      retry: {
        max_retries?: number
        backoff_ms?: number
        on_status?: number[]
      }
      operations: Array<{
        name: string
        description?: string
        method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS"
        path: string
        parameters?: Record<string, unknown>
        locations?: Record<string, "path" | "query" | "header" | "body">
        body_mapping?: Record<string, string> | null
        body_encoding?: "json" | "form"
      }>
    }
  }
  "connectors.delete": {
    method: "DELETE"
    path: "/api/v1/connectors/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "components.create": {
    method: "POST"
    path: "/api/v1/components"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      title?: string
      description?: string
      source_code?: string
      input_schema?: Record<string, unknown>
      enabled_agents?: string[]
      enabled_functions?: string[]
      enabled_queries?: string[]
      enabled_components?: string[]
      enabled_stores?: Array<{
        store: string
        access: "readonly" | "readwrite"
      }>
      css_overrides?: string
      visibility?: "private" | "shared" | "public"
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      title: string
      description: string
      source_code: string
      input_schema: Record<string, unknown>
      enabled_agents: string[]
      enabled_functions: string[]
      enabled_queries: string[]
      enabled_components: string[]
      enabled_stores: Array<{
        store: string
        access: "readonly" | "readwrite"
      }>
      css_overrides: string
      visibility: "private" | "shared" | "public"
    }
  }
  "components.list": {
    method: "GET"
    path: "/api/v1/components"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      title: string
      description: string
      source_code: string
      input_schema: Record<string, unknown>
      enabled_agents: string[]
      enabled_functions: string[]
      enabled_queries: string[]
      enabled_components: string[]
      enabled_stores: Array<{
        store: string
        access: "readonly" | "readwrite"
      }>
      css_overrides: string
      visibility: "private" | "shared" | "public"
    }>
  }
  "components.get": {
    method: "GET"
    path: "/api/v1/components/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      title: string
      description: string
      source_code: string
      input_schema: Record<string, unknown>
      enabled_agents: string[]
      enabled_functions: string[]
      enabled_queries: string[]
      enabled_components: string[]
      enabled_stores: Array<{
        store: string
        access: "readonly" | "readwrite"
      }>
      css_overrides: string
      visibility: "private" | "shared" | "public"
    }
  }
  "components.update": {
    method: "PUT"
    path: "/api/v1/components/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      title?: string
      description?: string
      source_code?: string
      input_schema?: Record<string, unknown>
      enabled_agents?: string[]
      enabled_functions?: string[]
      enabled_queries?: string[]
      enabled_components?: string[]
      enabled_stores?: Array<{
        store: string
        access: "readonly" | "readwrite"
      }>
      css_overrides?: string
      visibility?: "private" | "shared" | "public"
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      title: string
      description: string
      source_code: string
      input_schema: Record<string, unknown>
      enabled_agents: string[]
      enabled_functions: string[]
      enabled_queries: string[]
      enabled_components: string[]
      enabled_stores: Array<{
        store: string
        access: "readonly" | "readwrite"
      }>
      css_overrides: string
      visibility: "private" | "shared" | "public"
    }
  }
  "components.delete": {
    method: "DELETE"
    path: "/api/v1/components/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "database-connections.create": {
    method: "POST"
    path: "/api/v1/database-connections"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      name: string
      connection_type: "postgresql" | "clickhouse" | "snowflake"
      host: string
      port?: number | null
      database?: string
      username?: string
      password?: string | null
      ssl_mode?: "disable" | "prefer" | "require" | "verify-ca" | "verify-full" | null
      config?: {
        min_pool_size?: number
        max_pool_size?: number
        account?: string
        warehouse?: string
        schema?: string
        role?: string
        read_role?: string
        token_type?: "OAUTH" | "PROGRAMMATIC_ACCESS_TOKEN" | "KEYPAIR_JWT"
        [key: string]: unknown
      }
      allow_platform_database?: boolean
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      name: string
      connection_type: "postgresql" | "clickhouse" | "snowflake"
      host: string
      port: number | null
      database: string
      username: string
      has_password: boolean
      ssl_mode: "disable" | "prefer" | "require" | "verify-ca" | "verify-full" | null
      config: {
        min_pool_size?: number
        max_pool_size?: number
        account?: string
        warehouse?: string
        schema?: string
        role?: string
        read_role?: string
        token_type?: "OAUTH" | "PROGRAMMATIC_ACCESS_TOKEN" | "KEYPAIR_JWT"
        [key: string]: unknown
      }
      allow_platform_database: boolean
    }
  }
  "database-connections.list": {
    method: "GET"
    path: "/api/v1/database-connections"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      name: string
      connection_type: "postgresql" | "clickhouse" | "snowflake"
      host: string
      port: number | null
      database: string
      username: string
      has_password: boolean
      ssl_mode: "disable" | "prefer" | "require" | "verify-ca" | "verify-full" | null
      config: {
        min_pool_size?: number
        max_pool_size?: number
        account?: string
        warehouse?: string
        schema?: string
        role?: string
        read_role?: string
        token_type?: "OAUTH" | "PROGRAMMATIC_ACCESS_TOKEN" | "KEYPAIR_JWT"
        [key: string]: unknown
      }
      allow_platform_database: boolean
    }>
  }
  "database-connections.get": {
    method: "GET"
    path: "/api/v1/database-connections/{name}"
    params: {
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      name: string
      connection_type: "postgresql" | "clickhouse" | "snowflake"
      host: string
      port: number | null
      database: string
      username: string
      has_password: boolean
      ssl_mode: "disable" | "prefer" | "require" | "verify-ca" | "verify-full" | null
      config: {
        min_pool_size?: number
        max_pool_size?: number
        account?: string
        warehouse?: string
        schema?: string
        role?: string
        read_role?: string
        token_type?: "OAUTH" | "PROGRAMMATIC_ACCESS_TOKEN" | "KEYPAIR_JWT"
        [key: string]: unknown
      }
      allow_platform_database: boolean
    }
  }
  "database-connections.update": {
    method: "PATCH"
    path: "/api/v1/database-connections/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: {
      connection_type?: "postgresql" | "clickhouse" | "snowflake"
      host?: string
      port?: number | null
      database?: string
      username?: string
      password?: string | null
      ssl_mode?: "disable" | "prefer" | "require" | "verify-ca" | "verify-full" | null
      config?: {
        min_pool_size?: number
        max_pool_size?: number
        account?: string
        warehouse?: string
        schema?: string
        role?: string
        read_role?: string
        token_type?: "OAUTH" | "PROGRAMMATIC_ACCESS_TOKEN" | "KEYPAIR_JWT"
        [key: string]: unknown
      }
      allow_platform_database?: boolean
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      name: string
      connection_type: "postgresql" | "clickhouse" | "snowflake"
      host: string
      port: number | null
      database: string
      username: string
      has_password: boolean
      ssl_mode: "disable" | "prefer" | "require" | "verify-ca" | "verify-full" | null
      config: {
        min_pool_size?: number
        max_pool_size?: number
        account?: string
        warehouse?: string
        schema?: string
        role?: string
        read_role?: string
        token_type?: "OAUTH" | "PROGRAMMATIC_ACCESS_TOKEN" | "KEYPAIR_JWT"
        [key: string]: unknown
      }
      allow_platform_database: boolean
    }
  }
  "database-connections.delete": {
    method: "DELETE"
    path: "/api/v1/database-connections/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "queries.create": {
    method: "POST"
    path: "/api/v1/queries"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      database_connection_id: string
      description?: string
      operation?: "read" | "write"
      sql: string
      input_schema?: Record<string, unknown>
      output_schema?: Record<string, unknown>
      timeout_ms?: number
      max_rows?: number
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      database_connection_id: string
      description: string
      operation: "read" | "write"
      sql: string
      input_schema: Record<string, unknown>
      output_schema: Record<string, unknown>
      timeout_ms: number
      max_rows: number
    }
  }
  "queries.list": {
    method: "GET"
    path: "/api/v1/queries"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      database_connection_id: string
      description: string
      operation: "read" | "write"
      sql: string
      input_schema: Record<string, unknown>
      output_schema: Record<string, unknown>
      timeout_ms: number
      max_rows: number
    }>
  }
  "queries.get": {
    method: "GET"
    path: "/api/v1/queries/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      database_connection_id: string
      description: string
      operation: "read" | "write"
      sql: string
      input_schema: Record<string, unknown>
      output_schema: Record<string, unknown>
      timeout_ms: number
      max_rows: number
    }
  }
  "queries.update": {
    method: "PUT"
    path: "/api/v1/queries/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      database_connection_id?: string
      description?: string
      operation?: "read" | "write"
      sql?: string
      input_schema?: Record<string, unknown>
      output_schema?: Record<string, unknown>
      timeout_ms?: number
      max_rows?: number
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      database_connection_id: string
      description: string
      operation: "read" | "write"
      sql: string
      input_schema: Record<string, unknown>
      output_schema: Record<string, unknown>
      timeout_ms: number
      max_rows: number
    }
  }
  "queries.delete": {
    method: "DELETE"
    path: "/api/v1/queries/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "queries.versions": {
    method: "GET"
    path: "/api/v1/queries/{namespace}/{name}/versions"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: Array<{
      version: number
      fields: Record<string, unknown>
      created_by: string | null
      created_at: string
    }>
  }
  "collections.create": {
    method: "POST"
    path: "/api/v1/collections"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      description?: string
      metadata_schema?: Record<string, unknown>
      content_filter_function?: string | null
      post_upload_function?: string | null
      max_file_size_mb?: number
      max_total_size_gb?: number
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      metadata_schema: Record<string, unknown>
      content_filter_function: string | null
      post_upload_function: string | null
      max_file_size_mb: number
      max_total_size_gb: number
    }
  }
  "collections.list": {
    method: "GET"
    path: "/api/v1/collections"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      metadata_schema: Record<string, unknown>
      content_filter_function: string | null
      post_upload_function: string | null
      max_file_size_mb: number
      max_total_size_gb: number
    }>
  }
  "collections.get": {
    method: "GET"
    path: "/api/v1/collections/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      metadata_schema: Record<string, unknown>
      content_filter_function: string | null
      post_upload_function: string | null
      max_file_size_mb: number
      max_total_size_gb: number
    }
  }
  "collections.update": {
    method: "PUT"
    path: "/api/v1/collections/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      description?: string
      metadata_schema?: Record<string, unknown>
      content_filter_function?: string | null
      post_upload_function?: string | null
      max_file_size_mb?: number
      max_total_size_gb?: number
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      metadata_schema: Record<string, unknown>
      content_filter_function: string | null
      post_upload_function: string | null
      max_file_size_mb: number
      max_total_size_gb: number
    }
  }
  "collections.delete": {
    method: "DELETE"
    path: "/api/v1/collections/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "mcp-servers.create": {
    method: "POST"
    path: "/api/v1/mcp-servers"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      description?: string
      url: string
      transport?: "streamable-http" | "sse"
      auth?: {
        type?: "none" | "header" | "oauth"
        header?: string
        secret?: string
        client_id?: string
        scopes?: string[]
        prefix?: string
      }
      timeout_seconds?: number
      max_result_bytes?: number
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      url: string
      transport: "streamable-http" | "sse"
      auth: {
        type?: "none" | "header" | "oauth"
        header?: string
        secret?: string
        client_id?: string
        scopes?: string[]
        prefix?: string
      }
      timeout_seconds: number
      max_result_bytes: number
    }
  }
  "mcp-servers.list": {
    method: "GET"
    path: "/api/v1/mcp-servers"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      url: string
      transport: "streamable-http" | "sse"
      auth: {
        type?: "none" | "header" | "oauth"
        header?: string
        secret?: string
        client_id?: string
        scopes?: string[]
        prefix?: string
      }
      timeout_seconds: number
      max_result_bytes: number
    }>
  }
  "mcp-servers.get": {
    method: "GET"
    path: "/api/v1/mcp-servers/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      url: string
      transport: "streamable-http" | "sse"
      auth: {
        type?: "none" | "header" | "oauth"
        header?: string
        secret?: string
        client_id?: string
        scopes?: string[]
        prefix?: string
      }
      timeout_seconds: number
      max_result_bytes: number
    }
  }
  "mcp-servers.update": {
    method: "PUT"
    path: "/api/v1/mcp-servers/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      description?: string
      url?: string
      transport?: "streamable-http" | "sse"
      auth?: {
        type?: "none" | "header" | "oauth"
        header?: string
        secret?: string
        client_id?: string
        scopes?: string[]
        prefix?: string
      }
      timeout_seconds?: number
      max_result_bytes?: number
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      url: string
      transport: "streamable-http" | "sse"
      auth: {
        type?: "none" | "header" | "oauth"
        header?: string
        secret?: string
        client_id?: string
        scopes?: string[]
        prefix?: string
      }
      timeout_seconds: number
      max_result_bytes: number
    }
  }
  "mcp-servers.delete": {
    method: "DELETE"
    path: "/api/v1/mcp-servers/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "queue.cancel": {
    method: "POST"
    path: "/api/v1/queue/jobs/{job_id}/cancel"
    params: {
      job_id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      status: "cancelled"
      job_id: string
    }
  }
  "system.flush-stuck-jobs": {
    method: "POST"
    path: "/api/v1/system/flush-stuck-jobs"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      flushed: number
      job_ids: string[]
    }
  }
  "queue.stats": {
    method: "GET"
    path: "/api/v1/queue/stats"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      queues: {
        functions: {
          pending: number
          executing: number
        }
        agents: {
          pending: number
          executing: number
        }
        subagents: {
          pending: number
          executing: number
        }
      }
      jobs: {
        scheduled: number
        queued: number
        running: number
        completed: number
        failed: number
        cancelled: number
      }
      dlq: {
        size: number
      }
      workers: {
        functions: number
        agents: number
        subagents: number
      }
    }
  }
  "queue.jobs": {
    method: "GET"
    path: "/api/v1/queue/jobs"
    params: Record<string, never>
    query: {
      status?: "scheduled" | "queued" | "running" | "completed" | "failed" | "cancelled"
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      execution_id: string
      function: {
        namespace: string
        name: string
      }
      kind: string
      pool: string
      trigger_type: string
      trigger_id: string
      chat_id: string | null
      parent_id: string | null
      user_id: string | null
      status: "scheduled" | "queued" | "running" | "completed" | "failed" | "cancelled"
      attempts: number
      input_data: unknown
      output_data: unknown
      output: string | null
      error: string | null
      retry_of: string | null
      created_at: string
      started_at: string | null
      finished_at: string | null
      duration_ms: number | null
      callback_status: string | null
      callback_response_code: number | null
    }>
  }
  "queue.dlq.list": {
    method: "GET"
    path: "/api/v1/queue/dlq"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: Array<{
      job_id: string
      pool: string
      kind: string
      namespace: string
      name: string
      error: string | null
      attempts: number
      created_at: string
    }>
  }
  "queue.dlq.retry": {
    method: "POST"
    path: "/api/v1/queue/dlq/{job_id}/retry"
    params: {
      job_id: string
    }
    query: Record<string, never>
    body: never
    status: 202
    response: {
      status: "queued"
      job_id: string
      retry_of: string
    }
  }
  "queue.dlq.flush": {
    method: "POST"
    path: "/api/v1/queue/dlq/flush"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      flushed: number
    }
  }
  "queue.workers": {
    method: "GET"
    path: "/api/v1/queue/workers"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: Array<{
      role: string
      node_id: string
      info: Record<string, unknown>
      last_seen: string
    }>
  }
  "containers.stats": {
    method: "GET"
    path: "/api/v1/containers/stats"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      idle: number
      in_use: number
      total: number
      max_size: number
      nodes: Array<Record<string, unknown>>
      [key: string]: unknown
    }
  }
  "containers.scale": {
    method: "POST"
    path: "/api/v1/containers/scale"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      target: number
    }
    status: 200
    response: {
      action: "scale_up" | "scale_down"
      previous: number
      current: number
      added?: number
      removed?: number
    }
  }
  "containers.reload": {
    method: "POST"
    path: "/api/v1/containers/reload"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      status: string
      idle_containers: number
      success: number
      failed: number
      [key: string]: unknown
    }
  }
  "system.containers.restart": {
    method: "POST"
    path: "/api/v1/system/containers/{container_name}/restart"
    params: {
      container_name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      status: "restarted"
      container: string
    }
  }
  "workers.list": {
    method: "GET"
    path: "/api/v1/workers"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: Array<Record<string, unknown>>
  }
  "workers.count": {
    method: "GET"
    path: "/api/v1/workers/count"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      count: number
    }
  }
  "workers.scale": {
    method: "POST"
    path: "/api/v1/workers/scale"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      target_count: number
    }
    status: 200
    response: {
      action: string
      previous_count: number
      current_count: number
      added?: number
      removed?: number
    }
  }
  "workers.reload": {
    method: "POST"
    path: "/api/v1/workers/reload"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: {
      status: string
      total_workers: number
      success: number
      failed: number
    }
  }
  "users.list": {
    method: "GET"
    path: "/api/v1/users"
    params: Record<string, never>
    query: {
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      email: string
      is_active: boolean
      roles: string[]
      last_login_at: string | null
      created_at: string
    }>
  }
  "users.create": {
    method: "POST"
    path: "/api/v1/users"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      email: string
      is_active?: boolean
      roles?: string[]
    }
    status: 201
    response: {
      id: string
      email: string
      is_active: boolean
      roles: string[]
      last_login_at: string | null
      created_at: string
    }
  }
  "users.get": {
    method: "GET"
    path: "/api/v1/users/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      email: string
      is_active: boolean
      roles: string[]
      last_login_at: string | null
      created_at: string
    }
  }
  "users.update": {
    method: "PATCH"
    path: "/api/v1/users/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: {
      email?: string
      is_active?: boolean
      roles?: string[]
    }
    status: 200
    response: {
      id: string
      email: string
      is_active: boolean
      roles: string[]
      last_login_at: string | null
      created_at: string
    }
  }
  "users.delete": {
    method: "DELETE"
    path: "/api/v1/users/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "roles.permissions.reference": {
    method: "GET"
    path: "/api/v1/roles/permissions/reference"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: Array<{
      permission: string
      description: string
    }>
  }
  "roles.list": {
    method: "GET"
    path: "/api/v1/roles"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: Array<{
      id: string
      name: string
      description: string
      permissions: Record<string, boolean>
      users: string[]
      created_at: string
    }>
  }
  "roles.create": {
    method: "POST"
    path: "/api/v1/roles"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      name: string
      description?: string
      permissions?: Record<string, boolean>
    }
    status: 201
    response: {
      id: string
      name: string
      description: string
      permissions: Record<string, boolean>
      users: string[]
      created_at: string
    }
  }
  "roles.get": {
    method: "GET"
    path: "/api/v1/roles/{name}"
    params: {
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      name: string
      description: string
      permissions: Record<string, boolean>
      users: string[]
      created_at: string
    }
  }
  "roles.update": {
    method: "PATCH"
    path: "/api/v1/roles/{name}"
    params: {
      name: string
    }
    query: Record<string, never>
    body: {
      description?: string
      permissions?: Record<string, boolean>
    }
    status: 200
    response: {
      id: string
      name: string
      description: string
      permissions: Record<string, boolean>
      users: string[]
      created_at: string
    }
  }
  "roles.delete": {
    method: "DELETE"
    path: "/api/v1/roles/{name}"
    params: {
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "roles.users.add": {
    method: "POST"
    path: "/api/v1/roles/{name}/users/{id}"
    params: {
      name: string
      id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      name: string
      description: string
      permissions: Record<string, boolean>
      users: string[]
      created_at: string
    }
  }
  "roles.users.remove": {
    method: "DELETE"
    path: "/api/v1/roles/{name}/users/{id}"
    params: {
      name: string
      id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      name: string
      description: string
      permissions: Record<string, boolean>
      users: string[]
      created_at: string
    }
  }
  "api-keys.list": {
    method: "GET"
    path: "/api/v1/api-keys"
    params: Record<string, never>
    query: {
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: Array<{
      id: string
      name: string
      key_prefix: string
      user_id: string
      permissions: Record<string, boolean>
      expires_at: string | null
      last_used_at: string | null
      created_at: string
    }>
  }
  "api-keys.create": {
    method: "POST"
    path: "/api/v1/api-keys"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      name: string
      permissions: Record<string, boolean>
      expires_at?: string | null
    }
    status: 201
    response: {
      id: string
      name: string
      key_prefix: string
      user_id: string
      permissions: Record<string, boolean>
      expires_at: string | null
      last_used_at: string | null
      created_at: string
      key: string
    }
  }
  "api-keys.get": {
    method: "GET"
    path: "/api/v1/api-keys/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      name: string
      key_prefix: string
      user_id: string
      permissions: Record<string, boolean>
      expires_at: string | null
      last_used_at: string | null
      created_at: string
    }
  }
  "api-keys.delete": {
    method: "DELETE"
    path: "/api/v1/api-keys/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "namespaces.list": {
    method: "GET"
    path: "/api/v1/namespaces"
    params: Record<string, never>
    query: {
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: {
      items: Array<{
        name: string
        owner_id: string | null
        members: Array<{
          user_id: string
          granted_by: string | null
          accepted: boolean
        }>
        created_at: string
      }>
      total: number
    }
  }
  "namespaces.create": {
    method: "POST"
    path: "/api/v1/namespaces"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      name: string
    }
    status: 201
    response: {
      name: string
      owner_id: string | null
      members: Array<{
        user_id: string
        granted_by: string | null
        accepted: boolean
      }>
      created_at: string
    }
  }
  "namespaces.get": {
    method: "GET"
    path: "/api/v1/namespaces/{name}"
    params: {
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      name: string
      owner_id: string | null
      members: Array<{
        user_id: string
        granted_by: string | null
        accepted: boolean
      }>
      created_at: string
    }
  }
  "namespaces.delete": {
    method: "DELETE"
    path: "/api/v1/namespaces/{name}"
    params: {
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "namespaces.members.add": {
    method: "PUT"
    path: "/api/v1/namespaces/{name}/members/{user_id}"
    params: {
      name: string
      user_id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      name: string
      owner_id: string | null
      members: Array<{
        user_id: string
        granted_by: string | null
        accepted: boolean
      }>
      created_at: string
    }
  }
  "namespaces.members.remove": {
    method: "DELETE"
    path: "/api/v1/namespaces/{name}/members/{user_id}"
    params: {
      name: string
      user_id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      name: string
      owner_id: string | null
      members: Array<{
        user_id: string
        granted_by: string | null
        accepted: boolean
      }>
      created_at: string
    }
  }
  "dependencies.list": {
    method: "GET"
    path: "/api/v1/dependencies"
    params: Record<string, never>
    query: {
      status?: "pending" | "approved" | "rejected" | "installed" | "failed"
    }
    body: never
    status: 200
    response: Array<{
      id: string
      package_name: string
      version: string | null
      status: "pending" | "approved" | "rejected" | "installed" | "failed"
      error: string | null
      requested_by: string | null
      approved_by: string | null
      created_at: string
      updated_at: string
      approved_at: string | null
      installed_at: string | null
    }>
  }
  "dependencies.create": {
    method: "POST"
    path: "/api/v1/dependencies"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      package_name: string
      version?: string | null
    }
    status: 201
    response: {
      id: string
      package_name: string
      version: string | null
      status: "pending" | "approved" | "rejected" | "installed" | "failed"
      error: string | null
      requested_by: string | null
      approved_by: string | null
      created_at: string
      updated_at: string
      approved_at: string | null
      installed_at: string | null
    }
  }
  "dependencies.get": {
    method: "GET"
    path: "/api/v1/dependencies/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      package_name: string
      version: string | null
      status: "pending" | "approved" | "rejected" | "installed" | "failed"
      error: string | null
      requested_by: string | null
      approved_by: string | null
      created_at: string
      updated_at: string
      approved_at: string | null
      installed_at: string | null
    }
  }
  "dependencies.delete": {
    method: "DELETE"
    path: "/api/v1/dependencies/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "dependencies.approve": {
    method: "POST"
    path: "/api/v1/dependencies/{id}/approve"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      package_name: string
      version: string | null
      status: "pending" | "approved" | "rejected" | "installed" | "failed"
      error: string | null
      requested_by: string | null
      approved_by: string | null
      created_at: string
      updated_at: string
      approved_at: string | null
      installed_at: string | null
    }
  }
  "dependencies.reject": {
    method: "POST"
    path: "/api/v1/dependencies/{id}/reject"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      package_name: string
      version: string | null
      status: "pending" | "approved" | "rejected" | "installed" | "failed"
      error: string | null
      requested_by: string | null
      approved_by: string | null
      created_at: string
      updated_at: string
      approved_at: string | null
      installed_at: string | null
    }
  }
  "templates.get-by-id": {
    method: "GET"
    path: "/api/v1/templates/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      title: string | null
      html_content: string
      text_content: string | null
      variable_schema: Record<string, unknown>
    }
  }
  "templates.patch-by-id": {
    method: "PATCH"
    path: "/api/v1/templates/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: {
      description?: string
      title?: string | null
      html_content?: string
      text_content?: string | null
      variable_schema?: Record<string, unknown>
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      title: string | null
      html_content: string
      text_content: string | null
      variable_schema: Record<string, unknown>
    }
  }
  "templates.delete-by-id": {
    method: "DELETE"
    path: "/api/v1/templates/{id}"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "templates.get-by-name": {
    method: "GET"
    path: "/api/v1/templates/by-name/{namespace}/{name}"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      title: string | null
      html_content: string
      text_content: string | null
      variable_schema: Record<string, unknown>
    }
  }
  "templates.render-v1": {
    method: "POST"
    path: "/api/v1/templates/{id}/render"
    params: {
      id: string
    }
    query: Record<string, never>
    body: {
      variables?: Record<string, unknown>
    }
    status: 200
    response: {
      title: string | null
      html_content: string
      text_content: string | null
    }
  }
  "templates.send-v1": {
    method: "POST"
    path: "/api/v1/templates/{id}/send"
    params: {
      id: string
    }
    query: Record<string, never>
    body: {
      to: string | string[]
      variables?: Record<string, unknown>
      from_name?: string
    }
    status: 200
    response: {
      status: "sent"
      message_id: string
      recipients: string[]
      rejected: string[]
    }
  }
  "discovery.list-v1": {
    method: "GET"
    path: "/api/v1/discovery/{type}"
    params: {
      type: "agents" | "functions" | "skills" | "collections" | "templates"
    }
    query: {
      app?: string
    }
    body: never
    status: 200
    response: Array<{
      id: string
      namespace: string
      name: string
      [key: string]: unknown
    }>
  }
  "connectors.import": {
    method: "POST"
    path: "/api/v1/connectors/import"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      namespace?: string
      name: string
      openapi: string | Record<string, unknown>
      base_url?: string
      auth?: {
        type?: "none" | "bearer" | "basic" | "api_key" | "oauth2"
        secret?: string
        header?: string
        query_param?: string
        username?: string
        oauth2?: {
          authorization_url: string
          token_url: string
          revocation_url?: string
          client_id: string
          scopes?: string[]
          redirect_uri?: string
        }
      }
      description?: string
      headers?: Record<string, string>
      timeout_seconds?: number
      retry?: {
        max_retries?: number
        backoff_ms?: number
        on_status?: number[]
      }
      replace?: boolean
    }
    status: 201
    response: {
      id: string
      managed_by: string | null
      owner_id: string | null
      version: number
      is_active: boolean
      created_at: string
      updated_at: string
      namespace: string
      name: string
      description: string
      base_url: string
      auth: {
        type?: "none" | "bearer" | "basic" | "api_key" | "oauth2"
        secret?: string
        header?: string
        query_param?: string
        username?: string
        oauth2?: {
          authorization_url: string
          token_url: string
          revocation_url?: string
          client_id: string
          scopes?: string[]
          redirect_uri?: string
        }
      }
      headers: Record<string, string>
      timeout_seconds: number
      retry: {
        max_retries?: number
        backoff_ms?: number
        on_status?: number[]
      }
      operations: Array<{
        name: string
        description?: string
        method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS"
        path: string
        parameters?: Record<string, unknown>
        locations?: Record<string, "path" | "query" | "header" | "body">
        body_mapping?: Record<string, string> | null
        body_encoding?: "json" | "form"
      }>
    }
  }
  "connectors.execute": {
    method: "POST"
    path: "/api/v1/connectors/{namespace}/{name}/operations/{op}/execute"
    params: {
      namespace: string
      name: string
      op: string
    }
    query: Record<string, never>
    body: {
      input?: Record<string, unknown>
    }
    status: 200
    response: {
      status: number
      headers: Record<string, string>
      body: unknown
    }
  }
  "connectors.oauth-start": {
    method: "POST"
    path: "/api/v1/connectors/{namespace}/{name}/oauth/start"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      authorization_url: string
      state: string
      expires_in: number
    }
  }
  "connectors.oauth-status": {
    method: "GET"
    path: "/api/v1/connectors/{namespace}/{name}/oauth/token"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      connected: boolean
      scope: string | null
      expires_at: string | null
      has_refresh_token: boolean
      updated_at: string | null
    }
  }
  "connectors.oauth-disconnect": {
    method: "DELETE"
    path: "/api/v1/connectors/{namespace}/{name}/oauth/token"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "connectors.oauth-callback": {
    method: "GET"
    path: "/api/v1/oauth/callback"
    params: Record<string, never>
    query: {
      state?: string
      code?: string
      error?: string
      error_description?: string
    }
    body: never
    status: 200
    response: {
      status: "connected"
      connector: {
        namespace: string
        name: string
      }
      scope: string | null
      expires_at: string | null
    }
  }
  "mcp-servers.oauth-start": {
    method: "POST"
    path: "/api/v1/mcp-servers/{namespace}/{name}/oauth/start"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      authorization_url: string
      state: string
      expires_in: number
    }
  }
  "mcp-servers.oauth-status": {
    method: "GET"
    path: "/api/v1/mcp-servers/{namespace}/{name}/oauth/token"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      connected: boolean
      scope: string | null
      expires_at: string | null
      has_refresh_token: boolean
      updated_at: string | null
    }
  }
  "mcp-servers.oauth-disconnect": {
    method: "DELETE"
    path: "/api/v1/mcp-servers/{namespace}/{name}/oauth/token"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "mcp-servers.oauth-callback": {
    method: "GET"
    path: "/api/v1/oauth/mcp-servers/callback"
    params: Record<string, never>
    query: {
      state?: string
      code?: string
      error?: string
      error_description?: string
    }
    body: never
    status: 200
    response: {
      status: "connected"
      mcp_server: {
        namespace: string
        name: string
      }
      scope: string | null
      expires_at: string | null
    }
  }
  "components.compile": {
    method: "POST"
    path: "/api/v1/components/{namespace}/{name}/compile"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      namespace: string
      name: string
      compiled_bundle: string
      bundle_bytes: number
      source_sha256: string
      compiled_at: string
      warnings: Array<{
        line: number
        column: number
        message: string
      }>
    }
  }
  "components.shares.create": {
    method: "POST"
    path: "/api/v1/components/{namespace}/{name}/shares"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      expires_in?: number
      max_views?: number
    }
    status: 201
    response: {
      token: string
      url: string
      expires_at: string | null
      max_views: number | null
      views: number
      created_at: string
    }
  }
  "components.shares.list": {
    method: "GET"
    path: "/api/v1/components/{namespace}/{name}/shares"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: Array<{
      token: string
      url: string
      expires_at: string | null
      max_views: number | null
      views: number
      created_at: string
    }>
  }
  "components.shares.delete": {
    method: "DELETE"
    path: "/api/v1/components/{namespace}/{name}/shares/{token}"
    params: {
      namespace: string
      name: string
      token: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "database-connections.test": {
    method: "POST"
    path: "/api/v1/database-connections/test"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      connection_type: "postgresql" | "clickhouse" | "snowflake"
      host: string
      port?: number | null
      database?: string
      username?: string
      password?: string | null
      ssl_mode?: "disable" | "prefer" | "require" | "verify-ca" | "verify-full" | null
      config?: {
        min_pool_size?: number
        max_pool_size?: number
        account?: string
        warehouse?: string
        schema?: string
        role?: string
        read_role?: string
        token_type?: "OAUTH" | "PROGRAMMATIC_ACCESS_TOKEN" | "KEYPAIR_JWT"
        [key: string]: unknown
      }
      allow_platform_database?: boolean
    }
    status: 200
    response: {
      success: boolean
      message: string
      server_version: string | null
      duration_ms: number
      warnings: string[]
    }
  }
  "database-connections.test-saved": {
    method: "POST"
    path: "/api/v1/database-connections/{id}/test"
    params: {
      id: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      success: boolean
      message: string
      server_version: string | null
      duration_ms: number
      warnings: string[]
    }
  }
  "queries.execute-management": {
    method: "POST"
    path: "/api/v1/queries/{namespace}/{name}/execute"
    params: {
      namespace: string
      name: string
    }
    query: Record<string, never>
    body: {
      input: Record<string, unknown>
    }
    status: 200
    response: {
      operation: "read" | "write"
      rows: Array<Record<string, unknown>>
      row_count: number
      affected_rows?: number | null
      truncated: boolean
      duration_ms: number
    }
  }
  "schedules.list": {
    method: "GET"
    path: "/api/v1/schedules"
    params: Record<string, never>
    query: {
      limit?: number
      offset?: number
      all?: boolean
    }
    body: never
    status: 200
    response: Array<{
      id: string
      name: string
      owner_id: string
      schedule_type: string
      target_namespace: string
      target_name: string
      cron_expression: string
      timezone: string
      input_data: Record<string, unknown>
      content: string | null
      description: string
      is_active: boolean
      version: number
      created_at: string
      updated_at: string
    }>
  }
  "schedules.create": {
    method: "POST"
    path: "/api/v1/schedules"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      name: string
      schedule_type: "function" | "agent"
      target_namespace?: string
      target_name: string
      cron_expression: string
      timezone?: string
      input_data?: Record<string, unknown>
      content?: string
      description?: string
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      name: string
      owner_id: string
      schedule_type: string
      target_namespace: string
      target_name: string
      cron_expression: string
      timezone: string
      input_data: Record<string, unknown>
      content: string | null
      description: string
      is_active: boolean
      version: number
      created_at: string
      updated_at: string
    }
  }
  "schedules.get": {
    method: "GET"
    path: "/api/v1/schedules/{name}"
    params: {
      name: string
    }
    query: {
      owner_id?: string
      runs?: number
    }
    body: never
    status: 200
    response: {
      id: string
      name: string
      owner_id: string
      schedule_type: string
      target_namespace: string
      target_name: string
      cron_expression: string
      timezone: string
      input_data: Record<string, unknown>
      content: string | null
      description: string
      is_active: boolean
      version: number
      created_at: string
      updated_at: string
    } & {
      next_run: string | null
      last_run: {
        tick: string
        fired_at: string
        job_id: string | null
        chat_id: string | null
        status: string
        error: string | null
      } | null
      runs: Array<{
        tick: string
        fired_at: string
        job_id: string | null
        chat_id: string | null
        status: string
        error: string | null
      }>
    }
  }
  "schedules.update": {
    method: "PATCH"
    path: "/api/v1/schedules/{name}"
    params: {
      name: string
    }
    query: {
      owner_id?: string
    }
    body: {
      schedule_type?: "function" | "agent"
      target_namespace?: string
      target_name?: string
      cron_expression?: string
      timezone?: string
      input_data?: Record<string, unknown>
      content?: string | null
      description?: string
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      name: string
      owner_id: string
      schedule_type: string
      target_namespace: string
      target_name: string
      cron_expression: string
      timezone: string
      input_data: Record<string, unknown>
      content: string | null
      description: string
      is_active: boolean
      version: number
      created_at: string
      updated_at: string
    }
  }
  "schedules.delete": {
    method: "DELETE"
    path: "/api/v1/schedules/{name}"
    params: {
      name: string
    }
    query: {
      owner_id?: string
    }
    body: never
    status: 204
    response: void
  }
  "webhooks.list": {
    method: "GET"
    path: "/api/v1/webhooks"
    params: Record<string, never>
    query: {
      namespace?: string
      limit?: number
      offset?: number
      all?: boolean
    }
    body: never
    status: 200
    response: Array<{
      id: string
      path: string
      http_method: string
      function_namespace: string
      function_name: string
      requires_auth: boolean
      default_values: Record<string, unknown>
      description: string
      is_active: boolean
      owner_id: string
      has_signing_secret: boolean
      url_path: string
      created_at: string
      updated_at: string
    }>
  }
  "webhooks.create": {
    method: "POST"
    path: "/api/v1/webhooks"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      path: string
      http_method?: "GET" | "POST" | "PUT" | "DELETE" | "PATCH"
      function_namespace?: string
      function_name: string
      requires_auth?: boolean
      default_values?: Record<string, unknown>
      description?: string
      is_active?: boolean
      signing_secret?: string | null
    }
    status: 201
    response: {
      id: string
      path: string
      http_method: string
      function_namespace: string
      function_name: string
      requires_auth: boolean
      default_values: Record<string, unknown>
      description: string
      is_active: boolean
      owner_id: string
      has_signing_secret: boolean
      url_path: string
      created_at: string
      updated_at: string
    }
  }
  "webhooks.get": {
    method: "GET"
    path: "/api/v1/webhooks/{path}"
    params: {
      path: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      path: string
      http_method: string
      function_namespace: string
      function_name: string
      requires_auth: boolean
      default_values: Record<string, unknown>
      description: string
      is_active: boolean
      owner_id: string
      has_signing_secret: boolean
      url_path: string
      created_at: string
      updated_at: string
    }
  }
  "webhooks.update": {
    method: "PATCH"
    path: "/api/v1/webhooks/{path}"
    params: {
      path: string
    }
    query: Record<string, never>
    body: {
      path?: string
      http_method?: "GET" | "POST" | "PUT" | "DELETE" | "PATCH"
      function_namespace?: string
      function_name?: string
      requires_auth?: boolean
      default_values?: Record<string, unknown>
      description?: string
      is_active?: boolean
      signing_secret?: string | null
    }
    status: 200
    response: {
      id: string
      path: string
      http_method: string
      function_namespace: string
      function_name: string
      requires_auth: boolean
      default_values: Record<string, unknown>
      description: string
      is_active: boolean
      owner_id: string
      has_signing_secret: boolean
      url_path: string
      created_at: string
      updated_at: string
    }
  }
  "webhooks.delete": {
    method: "DELETE"
    path: "/api/v1/webhooks/{path}"
    params: {
      path: string
    }
    query: Record<string, never>
    body: never
    status: 204
    response: void
  }
  "db-triggers.list": {
    method: "GET"
    path: "/api/v1/database-triggers"
    params: Record<string, never>
    query: {
      limit?: number
      offset?: number
      all?: boolean
    }
    body: never
    status: 200
    response: Array<{
      id: string
      name: string
      owner_id: string
      database_connection_id: string
      schema_name: string
      table_name: string
      operations: string[]
      created_column: string | null
      function_namespace: string
      function_name: string
      poll_column: string
      poll_interval_seconds: number
      batch_size: number
      description: string
      is_active: boolean
      last_poll_value: string | null
      error_message: string | null
      last_polled_at: string | null
      version: number
      created_at: string
      updated_at: string
    }>
  }
  "db-triggers.create": {
    method: "POST"
    path: "/api/v1/database-triggers"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      name: string
      database_connection_id: string
      schema_name?: string
      table_name: string
      operations?: Array<"INSERT" | "UPDATE">
      created_column?: string | null
      function_namespace?: string
      function_name: string
      poll_column: string
      poll_interval_seconds?: number
      batch_size?: number
      description?: string
      is_active?: boolean
    }
    status: 201
    response: {
      id: string
      name: string
      owner_id: string
      database_connection_id: string
      schema_name: string
      table_name: string
      operations: string[]
      created_column: string | null
      function_namespace: string
      function_name: string
      poll_column: string
      poll_interval_seconds: number
      batch_size: number
      description: string
      is_active: boolean
      last_poll_value: string | null
      error_message: string | null
      last_polled_at: string | null
      version: number
      created_at: string
      updated_at: string
    }
  }
  "db-triggers.get": {
    method: "GET"
    path: "/api/v1/database-triggers/{name}"
    params: {
      name: string
    }
    query: {
      owner_id?: string
    }
    body: never
    status: 200
    response: {
      id: string
      name: string
      owner_id: string
      database_connection_id: string
      schema_name: string
      table_name: string
      operations: string[]
      created_column: string | null
      function_namespace: string
      function_name: string
      poll_column: string
      poll_interval_seconds: number
      batch_size: number
      description: string
      is_active: boolean
      last_poll_value: string | null
      error_message: string | null
      last_polled_at: string | null
      version: number
      created_at: string
      updated_at: string
    }
  }
  "db-triggers.update": {
    method: "PATCH"
    path: "/api/v1/database-triggers/{name}"
    params: {
      name: string
    }
    query: {
      owner_id?: string
    }
    body: {
      database_connection_id?: string
      schema_name?: string
      table_name?: string
      operations?: Array<"INSERT" | "UPDATE">
      created_column?: string | null
      function_namespace?: string
      function_name?: string
      poll_column?: string
      poll_interval_seconds?: number
      batch_size?: number
      description?: string
      is_active?: boolean
    }
    status: 200
    response: {
      id: string
      name: string
      owner_id: string
      database_connection_id: string
      schema_name: string
      table_name: string
      operations: string[]
      created_column: string | null
      function_namespace: string
      function_name: string
      poll_column: string
      poll_interval_seconds: number
      batch_size: number
      description: string
      is_active: boolean
      last_poll_value: string | null
      error_message: string | null
      last_polled_at: string | null
      version: number
      created_at: string
      updated_at: string
    }
  }
  "db-triggers.delete": {
    method: "DELETE"
    path: "/api/v1/database-triggers/{name}"
    params: {
      name: string
    }
    query: {
      owner_id?: string
    }
    body: never
    status: 204
    response: void
  }
  "events.stream": {
    method: "GET"
    path: "/api/v1/events/stream"
    params: Record<string, never>
    query: {
      filter?: string
      last_id?: number
    }
    body: never
    status: 200
    response: EventStream
  }
  "config.validate": {
    method: "POST"
    path: "/api/v1/config/validate"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      config: string
    }
    status: 200
    response: {
      valid: boolean
      errors: Array<{
        path: string
        message: string
        line?: number
        column?: number
      }>
      warnings: string[]
      code?: string
    }
  }
  "config.apply": {
    method: "POST"
    path: "/api/v1/config/apply"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      config: string
      dryRun?: boolean
      force?: boolean
    }
    status: 200
    response: {
      success: boolean
      summary: {
        created: number
        updated: number
        unchanged: number
        deleted: number
      }
      changes: Array<{
        action: "created" | "updated" | "deleted" | "unchanged"
        resourceType: string
        resourceName: string
        fields?: unknown
      }>
      errors: Array<{
        path: string
        message: string
        line?: number
        column?: number
      }>
      warnings: string[]
      code?: string
    }
  }
  "config.export": {
    method: "GET"
    path: "/api/v1/config/export"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: string
  }
  "packages.preview": {
    method: "POST"
    path: "/api/v1/packages/preview"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      source: string
      variables?: Record<string, string | boolean | number>
    }
    status: 200
    response: {
      success: boolean
      summary: {
        created: number
        updated: number
        unchanged: number
        deleted: number
      }
      changes: Array<{
        action: "created" | "updated" | "deleted" | "unchanged"
        resourceType: string
        resourceName: string
        fields?: unknown
      }>
      errors: Array<{
        path: string
        message: string
        [key: string]: unknown
      }>
      warnings: string[]
      variables: Array<{
        name: string
        type: "text" | "boolean" | "enum" | "resource_ref" | "secret"
        description?: string
        example?: unknown
        default?: unknown
        required?: boolean
        pattern?: string
        choices?: string[]
        resource?: "llm_providers" | "database_connections" | "collections" | "secrets" | "roles"
      }>
      requires_input: boolean
    }
  }
  "packages.install": {
    method: "POST"
    path: "/api/v1/packages/install"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      source: string
      variables?: Record<string, string | boolean | number>
    }
    status: 200
    response: {
      package: {
        id: string
        name: string
        version: string
        description: string
        author: string | null
        url: string | null
        values: Record<string, string>
        dependencies: Array<{
          package_name: string
          version: string | null
        }>
        installed_by: string | null
        installed_at: string
        updated_at: string
      }
      apply: {
        success: boolean
        summary: {
          created: number
          updated: number
          unchanged: number
          deleted: number
        }
        changes: Array<{
          action: "created" | "updated" | "deleted" | "unchanged"
          resourceType: string
          resourceName: string
          fields?: unknown
        }>
        errors: Array<{
          path: string
          message: string
          [key: string]: unknown
        }>
        warnings: string[]
      }
    }
  }
  "packages.create": {
    method: "POST"
    path: "/api/v1/packages/create"
    params: Record<string, never>
    query: Record<string, never>
    body: {
      name: string
      version: string
      description?: string
      author?: string
      url?: string
      resources: Array<{
        type: string
        namespace?: string
        name: string
      }>
    }
    status: 200
    response: {
      yaml: string
    }
  }
  "packages.list": {
    method: "GET"
    path: "/api/v1/packages"
    params: Record<string, never>
    query: Record<string, never>
    body: never
    status: 200
    response: Array<{
      id: string
      name: string
      version: string
      description: string
      author: string | null
      url: string | null
      values: Record<string, string>
      dependencies: Array<{
        package_name: string
        version: string | null
      }>
      installed_by: string | null
      installed_at: string
      updated_at: string
    }>
  }
  "packages.get": {
    method: "GET"
    path: "/api/v1/packages/{name}"
    params: {
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      id: string
      name: string
      version: string
      description: string
      author: string | null
      url: string | null
      values: Record<string, string>
      dependencies: Array<{
        package_name: string
        version: string | null
      }>
      installed_by: string | null
      installed_at: string
      updated_at: string
      resources: Array<{
        type: string
        name: string
      }>
    }
  }
  "packages.uninstall": {
    method: "DELETE"
    path: "/api/v1/packages/{name}"
    params: {
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: {
      package: string
      apply: {
        success: boolean
        summary: {
          created: number
          updated: number
          unchanged: number
          deleted: number
        }
        changes: Array<{
          action: "created" | "updated" | "deleted" | "unchanged"
          resourceType: string
          resourceName: string
          fields?: unknown
        }>
        errors: Array<{
          path: string
          message: string
          [key: string]: unknown
        }>
        warnings: string[]
      }
    }
  }
  "packages.export": {
    method: "GET"
    path: "/api/v1/packages/{name}/export"
    params: {
      name: string
    }
    query: Record<string, never>
    body: never
    status: 200
    response: string
  }
  "usage.report": {
    method: "GET"
    path: "/api/v1/usage"
    params: Record<string, never>
    query: {
      from?: string
      to?: string
      user_id?: string
      agent?: string
      provider?: string
      model?: string
      group_by?: string
    }
    body: never
    status: 200
    response: {
      from: string
      to: string
      group_by: Array<"day" | "user" | "agent" | "provider" | "model">
      rows: Array<{
        day: string | null
        user_id: string | null
        agent: string | null
        agent_id: string | null
        provider: string | null
        model: string | null
        prompt_tokens: number
        completion_tokens: number
        total_tokens: number
        cost: number | null
        calls: number
      }>
      totals: {
        prompt_tokens: number
        completion_tokens: number
        total_tokens: number
        cost: number | null
        calls: number
      }
    }
  }
  "request-logs.list": {
    method: "GET"
    path: "/api/v1/request-logs"
    params: Record<string, never>
    query: {
      from?: string
      to?: string
      user_id?: string
      route?: string
      status_class?: "2xx" | "3xx" | "4xx" | "5xx"
      min_duration_ms?: number
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: {
      items: Array<{
        time: string
        method: string
        route: string
        status: number
        duration_ms: number
        user_id: string
        namespace: string
        bytes_in: number
        bytes_out: number
        client_ip: string
        request_id: string
        trace_id: string
      }>
      total: number
    }
  }
  "execution-logs.list": {
    method: "GET"
    path: "/api/v1/execution-logs"
    params: Record<string, never>
    query: {
      from?: string
      to?: string
      user_id?: string
      kind?: string
      namespace?: string
      name?: string
      status?: "completed" | "failed" | "cancelled"
      min_duration_ms?: number
      limit?: number
      offset?: number
    }
    body: never
    status: 200
    response: {
      items: Array<{
        time: string
        execution_id: string
        kind: string
        namespace: string
        name: string
        pool: string
        user_id: string
        status: string
        attempt: number
        duration_ms: number
        error_code: string
        error: string
        trigger_type: string
        trace_id: string
      }>
      total: number
    }
  }
}

export type OperationId = keyof Operations

export interface ResourceKindInfo {
  kind: string
  plural: string
  title: string
  description: string
  addressing: 'namespaced' | 'named'
  updateMethod: 'PUT' | 'PATCH'
  adminOnly: boolean
  secrets: string[]
  versioned: boolean
}

/** The resource kinds (defineKind), in the platform order. */
export const RESOURCE_KINDS: readonly ResourceKindInfo[] = [
  {
    "kind": "agent",
    "plural": "agents",
    "title": "Agent",
    "description": "LLM assistants with a system prompt, tools, hooks and sub-agents.",
    "addressing": "namespaced",
    "updateMethod": "PUT",
    "adminOnly": false,
    "secrets": [],
    "versioned": false
  },
  {
    "kind": "function",
    "plural": "functions",
    "title": "Function",
    "description": "Python functions run in isolated sandboxes; every code change is a new version.",
    "addressing": "namespaced",
    "updateMethod": "PUT",
    "adminOnly": false,
    "secrets": [],
    "versioned": true
  },
  {
    "kind": "skill",
    "plural": "skills",
    "title": "Skill",
    "description": "Instruction documents agents preload or call as tools.",
    "addressing": "namespaced",
    "updateMethod": "PUT",
    "adminOnly": false,
    "secrets": [],
    "versioned": false
  },
  {
    "kind": "llm_provider",
    "plural": "llm-providers",
    "title": "LlmProvider",
    "description": "Connections to LLM APIs (admin only; api_key encrypted at rest and never returned).",
    "addressing": "named",
    "updateMethod": "PATCH",
    "adminOnly": true,
    "secrets": [
      "api_key"
    ],
    "versioned": false
  },
  {
    "kind": "secret",
    "plural": "secrets",
    "title": "Secret",
    "description": "Encrypted values owned by their creator.",
    "addressing": "namespaced",
    "updateMethod": "PUT",
    "adminOnly": false,
    "secrets": [
      "value"
    ],
    "versioned": false
  },
  {
    "kind": "store",
    "plural": "stores",
    "title": "Store",
    "description": "Persistent key-value state for agents, components and functions.",
    "addressing": "namespaced",
    "updateMethod": "PUT",
    "adminOnly": false,
    "secrets": [],
    "versioned": false
  },
  {
    "kind": "template",
    "plural": "templates",
    "title": "Template",
    "description": "Jinja2 templates rendered through the hardened renderer and sent as email.",
    "addressing": "namespaced",
    "updateMethod": "PUT",
    "adminOnly": false,
    "secrets": [],
    "versioned": false
  },
  {
    "kind": "manifest",
    "plural": "manifests",
    "title": "Manifest",
    "description": "What an application needs: resources, permissions, exposed namespaces and store dependencies.",
    "addressing": "namespaced",
    "updateMethod": "PUT",
    "adminOnly": false,
    "secrets": [],
    "versioned": false
  },
  {
    "kind": "connector",
    "plural": "connectors",
    "title": "Connector",
    "description": "HTTP APIs with typed operations, callable by the API and as agent tools.",
    "addressing": "namespaced",
    "updateMethod": "PUT",
    "adminOnly": false,
    "secrets": [],
    "versioned": false
  },
  {
    "kind": "component",
    "plural": "components",
    "title": "Component",
    "description": "UI widgets compiled from JSX and rendered as pages; they call functions, agents, queries and stores only through proxies that enforce their enabled_* lists.",
    "addressing": "namespaced",
    "updateMethod": "PUT",
    "adminOnly": false,
    "secrets": [],
    "versioned": false
  },
  {
    "kind": "database_connection",
    "plural": "database-connections",
    "title": "DatabaseConnection",
    "description": "Connections to external databases that queries run on (admin only; password encrypted at rest and never returned).",
    "addressing": "named",
    "updateMethod": "PATCH",
    "adminOnly": true,
    "secrets": [
      "password"
    ],
    "versioned": false
  },
  {
    "kind": "query",
    "plural": "queries",
    "title": "Query",
    "description": "Saved parameterized SQL on a database connection, executable over the API and as an agent tool.",
    "addressing": "namespaced",
    "updateMethod": "PUT",
    "adminOnly": false,
    "secrets": [],
    "versioned": true
  },
  {
    "kind": "collection",
    "plural": "collections",
    "title": "Collection",
    "description": "Versioned file storage with metadata validation, content filters and post-upload processing.",
    "addressing": "namespaced",
    "updateMethod": "PUT",
    "adminOnly": false,
    "secrets": [],
    "versioned": false
  },
  {
    "kind": "mcp_server",
    "plural": "mcp-servers",
    "title": "McpServer",
    "description": "Remote MCP servers (Streamable HTTP or HTTP+SSE) whose tools agents use.",
    "addressing": "namespaced",
    "updateMethod": "PUT",
    "adminOnly": false,
    "secrets": [],
    "versioned": false
  }
]
