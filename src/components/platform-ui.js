/*
 * platform-ui: the runtime of a rendered component page (served by the gateway at
 * /components/assets/platform-ui@<version>/platform-ui.js). It reads the page's configuration
 * (the JSON in #platform-component), offers `window.PlatformUI` — what a component imports as
 * `platform-ui` — and mounts the component's default export into #root once the page is parsed.
 * Every call goes to the page proxies (/components/view/...) with the page's view ticket: no
 * platform token is ever on the page. An embedded component (enabled_components) is a nested,
 * sandboxed frame whose page the platform serves at /components/view/embed/... for this ticket.
 */
;(function () {
  'use strict'
  var el = document.getElementById('platform-component')
  var cfg = el === null ? {} : JSON.parse(el.textContent || '{}')
  var enc = encodeURIComponent
  function split(ref) {
    var i = String(ref).indexOf('/')
    if (i <= 0) throw new Error('expected "<namespace>/<name>", got "' + ref + '"')
    return [ref.slice(0, i), ref.slice(i + 1)]
  }
  function post(path, body) {
    body.ticket = cfg.ticket
    return fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      credentials: 'omit',
    }).then(function (res) {
      return res.text().then(function (text) {
        var data = null
        try {
          data = text === '' ? null : JSON.parse(text)
        } catch {
          data = { detail: text }
        }
        if (!res.ok) {
          var err = new Error((data && data.detail) || 'HTTP ' + res.status)
          err.status = res.status
          err.code = data && data.code
          throw err
        }
        return data
      })
    })
  }
  var ui = {
    version: cfg.version,
    component: cfg.component,
    input: cfg.input || {},
    /** Runs an enabled function: resolves to {status, execution_id, result, error}. */
    execute: function (ref, input, options) {
      var r = split(ref)
      var body = { input: input === undefined ? {} : input }
      if (options && options.timeout) body.timeout = options.timeout
      return post('/components/view/functions/' + enc(r[0]) + '/' + enc(r[1]) + '/execute', body)
    },
    /** Sends a message to an enabled agent: resolves to {reply, chat_id, session_key}. */
    invokeAgent: function (ref, message, options) {
      var r = split(ref)
      var body = { message: message }
      if (options && options.session_key) body.session_key = options.session_key
      if (options && options.reset) body.reset = true
      if (options && options.input) body.input = options.input
      return post('/components/view/agents/' + enc(r[0]) + '/' + enc(r[1]) + '/invoke', body)
    },
    /** Runs an enabled query. */
    query: function (ref, input) {
      var r = split(ref)
      return post('/components/view/queries/' + enc(r[0]) + '/' + enc(r[1]) + '/execute', { input: input || {} })
    },
    /** Reads or writes an enabled store: {store, action: list|get|set|delete, key?, value?}. */
    state: function (namespace, body) {
      return post('/components/view/states/' + enc(namespace), body)
    },
    /** The URL of an enabled component's page for a nested frame (its own ticket is minted when it loads). */
    embedUrl: function (ref, input) {
      var r = split(ref)
      var q = '?ticket=' + enc(cfg.ticket || '')
      if (input !== undefined) q += '&input=' + enc(JSON.stringify(input))
      return '/components/view/embed/' + enc(r[0]) + '/' + enc(r[1]) + q
    },
  }
  /**
   * <PlatformUI.Embed component="ns/name" input={{…}} title="…" style={{…}} />: an enabled component
   * in a sandboxed frame (scripts only: an opaque origin, like this page).
   */
  ui.Embed = function (props) {
    var style = props.style || { border: '0', width: '100%', minHeight: '150px' }
    return window.React.createElement('iframe', {
      src: ui.embedUrl(props.component, props.input),
      sandbox: 'allow-scripts',
      referrerPolicy: 'no-referrer',
      title: props.title || props.component,
      style: style,
      className: props.className,
    })
  }
  window.PlatformUI = ui

  function fail(message) {
    var root = document.getElementById('root')
    if (root !== null) {
      var pre = document.createElement('pre')
      pre.className = 'platform-error'
      pre.textContent = message
      root.replaceChildren(pre)
    }
  }
  function mount() {
    var mod = window.PlatformComponent
    var C = mod && (mod.default || mod.Component)
    if (typeof C !== 'function' && !(C && typeof C === 'object')) {
      fail('the component has no default export')
      return
    }
    try {
      window.ReactDOM.createRoot(document.getElementById('root')).render(
        window.React.createElement(C, { input: ui.input, platform: ui }),
      )
    } catch (e) {
      fail(String((e && e.message) || e))
    }
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', mount)
  else setTimeout(mount, 0)
})()
