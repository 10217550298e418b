/**
 * The script `/docs` adds to Swagger UI when the API needs authentication: the page (the shell)
 * loads without a token, but its document (`/docs/json`) answers 401 like every other route. Swagger
 * UI's own "Authorize" button comes from the document, so it cannot take the first token: this
 * script asks for one when the document is refused, keeps it where Swagger UI's
 * `persistAuthorization` keeps its own (localStorage `authorized`, so that the button shows it and
 * its "Logout" forgets it), reloads, and from then on sends it with every request to this origin
 * that carries no Authorization of its own: the document's, and "Try it out" calls.
 *
 * Plain ES2017 served as a file (the page's policy runs no inline script); it builds its form with
 * DOM calls, never from markup, and sends the token nowhere but to its own origin.
 */
export const DOCS_TOKEN_SCRIPT = `(function () {
  'use strict'
  var KEY = 'authorized'
  // The document's security scheme (src/http/openapi-document.ts), as Swagger UI stores it.
  var SCHEME = { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }

  function storedToken() {
    try {
      var all = JSON.parse(localStorage.getItem(KEY) || '{}')
      for (var name in all) {
        var a = all[name]
        if (a && a.schema && a.schema.type === 'http' && /^bearer$/i.test(a.schema.scheme) && typeof a.value === 'string' && a.value !== '') return a.value
      }
    } catch (e) {}
    return undefined
  }

  function sameOrigin(url) {
    try {
      return new URL(url, location.href).origin === location.origin
    } catch (e) {
      return false
    }
  }

  function isDocument(url) {
    try {
      return new URL(url, location.href).pathname === location.pathname.replace(/\\/?$/, '/json')
    } catch (e) {
      return false
    }
  }

  function ask(refused) {
    if (refused) localStorage.removeItem(KEY)
    if (document.getElementById('mcp-docs-token') !== null) return
    var form = document.createElement('form')
    form.id = 'mcp-docs-token'
    var text = document.createElement('p')
    text.textContent = refused
      ? 'The server refused that token (expired, or not for this server). Paste another access token:'
      : 'This server needs an access token or API key to show its API reference. Paste one (this browser keeps it until "Logout" in the Authorize dialog):'
    var input = document.createElement('input')
    input.type = 'password'
    input.name = 'token'
    input.autocomplete = 'off'
    input.required = true
    input.placeholder = 'access token'
    input.setAttribute('aria-label', 'access token')
    var button = document.createElement('button')
    button.type = 'submit'
    button.textContent = 'Show the reference'
    form.append(text, input, button)
    form.addEventListener('submit', function (event) {
      event.preventDefault()
      var token = input.value.trim().replace(/^bearer\\s+/i, '')
      if (token === '') return
      localStorage.setItem(KEY, JSON.stringify({ bearer: { name: 'bearer', schema: SCHEME, value: token } }))
      location.reload()
    })
    document.body.insertBefore(form, document.body.firstChild)
    input.focus()
  }

  window.mcpDocs = {
    request: function (request) {
      var token = storedToken()
      var headers = request.headers || (request.headers = {})
      var has = Object.keys(headers).some(function (h) { return h.toLowerCase() === 'authorization' })
      if (token !== undefined && !has && sameOrigin(request.url)) headers.Authorization = 'Bearer ' + token
      return request
    },
    response: function (response) {
      if (response.status === 401 && isDocument(response.url)) ask(storedToken() !== undefined)
      return response
    }
  }
})()
`

/** The form's look, as a stylesheet file (the page's policy allows no inline style). */
export const DOCS_TOKEN_STYLE = `#mcp-docs-token { max-width: 1460px; margin: 0 auto; padding: 20px; font-family: sans-serif; }
#mcp-docs-token input { width: 60%; padding: 8px; margin-right: 8px; font-family: monospace; }
#mcp-docs-token button { padding: 8px 16px; cursor: pointer; }
#mcp-console-link { max-width: 1460px; margin: 0 auto; padding: 12px 20px 0; font-family: sans-serif; }
`

/**
 * A link from /docs to the console beside it (`/console`, or `/{name}/console` on a gateway's
 * mount): what Swagger UI cannot do (answer `input_required` rounds, follow a task, show progress),
 * the console does. Built with DOM calls, like the token form.
 */
export const DOCS_CONSOLE_LINK_SCRIPT = `(function () {
  'use strict'
  var note = document.createElement('p')
  note.id = 'mcp-console-link'
  var link = document.createElement('a')
  link.href = location.pathname.replace(/\\/docs\\/?$/, '/console')
  link.textContent = 'the console'
  note.append('Tools that ask questions (input_required), run as tasks or report progress: use ', link, '.')
  document.body.insertBefore(note, document.body.firstChild)
})()
`
